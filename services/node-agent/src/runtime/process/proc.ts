import fs from "node:fs";

/** A shell word: single-quoted, so nothing in it is expanded. */
export function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * A process's start time in clock ticks since boot (field 22 of
 * /proc/PID/stat), or undefined when it is gone. Pid + start time names a
 * process for good: pids are reused, the pair is not.
 */
export function procStartTime(pid: number): string | undefined {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // comm (field 2) may hold spaces and parentheses: count from the last ')'.
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  if (rest[0] === "Z" || rest[0] === "X") return undefined; // a zombie is dead
  return rest[19];
}

/** Whether `pid` is still the process that started at `startTime`. */
export function alive(pid: number, startTime: string | undefined): boolean {
  return startTime !== undefined && procStartTime(pid) === startTime;
}

/** The children of a process (needs CONFIG_PROC_CHILDREN, on in Debian's kernels). */
export function childrenOf(pid: number): number[] {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Whether the agent itself runs with no_new_privs (then its children all do, and that tells nothing). */
let agentNoNewPrivs: boolean | undefined;

/**
 * Whether a container's command has its root: it runs under a seccomp
 * filter or with no_new_privs (choreo-exec sets both once its root is set
 * up — no_new_privs alone for seccompProfile Unconfined; PID 1 never has
 * either) or, started before choreo-exec, under another root than ours
 * (chroot). After pivot_root the root reads "/" from here: it cannot tell alone.
 */
export function confined(pid: number): boolean {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    if (/^Seccomp:\s*2$/m.test(status)) return true;
    agentNoNewPrivs ??= /^NoNewPrivs:\s*1$/m.test(fs.readFileSync("/proc/self/status", "utf8"));
    if (!agentNoNewPrivs && /^NoNewPrivs:\s*1$/m.test(status)) return true;
    return fs.readlinkSync(`/proc/${pid}/root`) !== "/";
  } catch {
    return false;
  }
}

/** Sends a signal, ignoring processes that are already gone. */
export function signal(pid: number, sig: NodeJS.Signals): void {
  if (pid === 0 || !Number.isInteger(pid)) return;
  try {
    process.kill(pid, sig);
  } catch {
    // gone already
  }
}

/** The epoch (seconds, fractional) the kernel booted at: the log timestamper adds /proc/uptime to it. */
export function bootEpochSeconds(): number {
  const uptime = Number(fs.readFileSync("/proc/uptime", "utf8").split(" ")[0]);
  return Date.now() / 1000 - uptime;
}

/** Which of `paths` are mount points in this mount namespace (one read of the mount table for all). */
export function mountedAmong(paths: readonly string[]): Set<string> {
  const wanted = new Set(paths);
  const found = new Set<string>();
  for (const l of fs.readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
    const m = l.split(" ", 5)[4];
    if (m !== undefined && wanted.has(m)) found.add(m);
  }
  return found;
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
