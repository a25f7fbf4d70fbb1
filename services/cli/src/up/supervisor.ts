// How `choreo up` keeps its children running: every process it starts
// (nats-server, redis-server, the api, the actors) is restarted with an
// exponential backoff when it dies, until the cluster stops; its pid is
// recorded in <data dir>/pids so that `choreo down` finds it after a crash.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { ManagedProcess } from "@choreo/kit/process";
import { backoff, sleep, type BackoffOptions } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";

/** The restart backoff of every supervised process: 1 s, 2 s, 4 s … up to 30 s; back to 1 s after 30 s up. */
export const RESTART_BACKOFF: BackoffOptions = { initialMs: 1_000, maxMs: 30_000 };
/** A process that ran this long before it died is restarted after the first delay again. */
const STABLE_MS = 30_000;

/**
 * Shared by the supervisors of one cluster: set once, synchronously, when
 * the cluster starts stopping (a signal, `choreo down`, a failed start), so
 * that no supervisor takes an exit that follows for a crash — on a
 * terminal's Ctrl-C every child gets the SIGINT too, and exits on its own
 * before its turn to be stopped comes.
 */
export class Shutdown {
  private readonly ac = new AbortController();
  get stopping(): boolean {
    return this.ac.signal.aborted;
  }
  get signal(): AbortSignal {
    return this.ac.signal;
  }
  begin(): void {
    this.ac.abort();
  }
}

/** A supervised process. */
export interface Supervised {
  readonly name: string;
  current(): ManagedProcess;
  /** Stops it (SIGTERM, SIGKILL after `graceMs`) and any restart under way; never restarts it again. */
  stop(graceMs: number): Promise<void>;
}

export interface SuperviseOptions {
  name: string;
  /** Starts the process (again) and resolves once it is ready. */
  launch: () => Promise<ManagedProcess>;
  /** Already started (the servers start before they are supervised); else `launch()` starts it. */
  initial?: ManagedProcess;
  shutdown: Shutdown;
  log: Logger;
  /** Where its output goes (said in the log lines). */
  logFile: string;
  /** Where its pid is recorded (`<data dir>/pids`). */
  pidDir: string;
  backoff?: BackoffOptions;
}

/** Starts (or adopts) a process and restarts it whenever it dies, until the cluster stops. */
export async function supervise(o: SuperviseOptions): Promise<Supervised> {
  let proc = o.initial ?? (await o.launch());
  recordPid(o.pidDir, o.name, proc.pid);
  let startedAt = Date.now();
  const delays = backoff(o.backoff ?? RESTART_BACKOFF);
  const loop = (async (): Promise<void> => {
    for (;;) {
      const exit = await proc.exited;
      if (o.shutdown.stopping) return;
      if (Date.now() - startedAt >= STABLE_MS) delays.reset();
      let delayMs = delays.next();
      o.log.warn(
        { process: o.name, pid: proc.pid, code: exit.code, signal: exit.signal, restartInMs: Math.round(delayMs), logFile: o.logFile },
        "process exited; restarting",
      );
      for (;;) {
        if (!(await sleep(delayMs, o.shutdown.signal))) return;
        try {
          const next = await o.launch();
          if (o.shutdown.stopping) {
            // Ready just as the cluster began to stop: it must not outlive it.
            await next.stop(10_000);
            return;
          }
          proc = next;
          break;
        } catch (err) {
          if (o.shutdown.stopping) return;
          delayMs = delays.next();
          o.log.error(
            { process: o.name, err: (err as Error).message.split("\n")[0], retryInMs: Math.round(delayMs), logFile: o.logFile },
            "process restart failed",
          );
        }
      }
      startedAt = Date.now();
      recordPid(o.pidDir, o.name, proc.pid);
      o.log.info({ process: o.name, pid: proc.pid }, "process restarted");
    }
  })();
  return {
    name: o.name,
    current: () => proc,
    async stop(graceMs) {
      o.shutdown.begin();
      await proc.stop(graceMs);
      await loop;
      rmSync(path.join(o.pidDir, o.name), { force: true });
    },
  };
}

/**
 * The kernel's start time of `pid` (clock ticks since boot, field 22 of
 * /proc/PID/stat): with the pid, it names one process — a pid reused by
 * another process after a crash has another start time.
 */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command (field 2) is in parentheses and may hold spaces: count from the last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/** Writes `<pidDir>/<name>`: "<pid> <start time>". */
export function recordPid(pidDir: string, name: string, pid: number): void {
  const start = processStartTime(pid);
  if (!start) return; // already gone: nothing to find later
  mkdirSync(pidDir, { recursive: true });
  writeFileSync(path.join(pidDir, name), `${pid} ${start}\n`);
}
