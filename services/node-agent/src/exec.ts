import { execFile } from "node:child_process";

/** A command that exited non-zero: its stderr is the message, the exit code kept. */
export class CommandError extends Error {
  override readonly name = "CommandError";
  constructor(
    readonly command: string,
    readonly code: number | string | null,
    readonly stderr: string,
  ) {
    super(`${command}: ${stderr.trim() || `exit ${String(code)}`}`);
  }
}

/** Options of {@link run}. */
export interface RunOptions {
  /** Written to stdin (`ip -batch -`, `iptables-restore`): one spawn for many commands. */
  input?: string;
  /** Killed after this long (default 60 s: a stuck `ip` or `mount` must not hang a reconcile). */
  timeoutMs?: number;
}

/**
 * Runs `file args` without a shell and resolves with its stdout; rejects with
 * a CommandError carrying stderr on a non-zero exit. The one way the node
 * agent runs host commands (ip, iptables, mount, unshare, …).
 */
export function run(file: string, args: readonly string[], opts: RunOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(file, args, { maxBuffer: 64 * 1024 * 1024, timeout: opts.timeoutMs ?? 60_000, encoding: "utf8" }, (err, stdout, stderr) => {
      if (err) {
        const code = (err as NodeJS.ErrnoException & { code?: number | string }).code ?? null;
        reject(new CommandError([file, ...args].join(" "), code, stderr || err.message));
        return;
      }
      resolve(stdout);
    });
    if (opts.input !== undefined) child.stdin?.end(opts.input);
  });
}

/** Like `run` but resolves false instead of rejecting (probing whether something exists). */
export async function succeeds(file: string, args: readonly string[]): Promise<boolean> {
  try {
    await run(file, args);
    return true;
  } catch {
    return false;
  }
}
