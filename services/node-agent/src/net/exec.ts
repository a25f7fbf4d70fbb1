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

/**
 * Runs `file args` without a shell and resolves with its stdout; rejects with
 * a CommandError carrying stderr on a non-zero exit. `input` is written to
 * stdin (`ip -batch -`, `iptables-restore`), which saves one spawn per command.
 */
export function run(file: string, args: readonly string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(file, args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) {
        const code = (err as NodeJS.ErrnoException & { code?: number | string }).code ?? null;
        reject(new CommandError([file, ...args].join(" "), code, stderr || err.message));
        return;
      }
      resolve(stdout);
    });
    if (input !== undefined) child.stdin?.end(input);
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
