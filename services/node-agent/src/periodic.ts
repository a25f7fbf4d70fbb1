import type { Runnable } from "@choreo/kit/lifecycle";
import { onAbort } from "@choreo/kit/lifecycle";
import { FailureLog, type Logger } from "@choreo/kit/log";
import { slottedTimeout } from "./clock.js";

/**
 * The slot a period's wake-ups are rounded up to (clock `slottedTimeout`): 1/50 of the period, at most 100 ms —
 * a Lease renewed every 10 s is renewed 10–10.1 s apart, and the renewals of the hollow nodes due in one slot
 * leave in one socket write.
 */
export function periodSlotMs(everyMs: number): number {
  return Math.max(1, Math.min(100, Math.floor(everyMs / 50)));
}

/** The constant message of a failed periodic call. */
const TASK_FAILED = "periodic task failed";

/**
 * A Runnable that calls `fn` every `everyMs` (after a random first delay up
 * to `everyMs` when `jitterFirst`, so that many hollow nodes do not beat in
 * step; with `spread`, each wait after a call is `everyMs` less up to that
 * fraction of it at random — as the kubelet's jittered pod resync, but
 * downwards, so that `everyMs` stays the longest wait — and tasks started
 * together drift apart). A failing call is logged and tried again next period. The waits
 * share Node timers with the other periodic tasks of the process due in the
 * same slot ({@link periodSlotMs}). Failures go to `opts.failures` (kit/log
 * FailureLog: the hollow nodes of a process share one, so that the api away
 * writes a few whole lines and a summary, not a line with a stack per node per
 * round) under `opts.subject` (the node), with the task as `task`; a success
 * after failures ends the streak.
 */
export function periodic(
  name: string,
  everyMs: number,
  fn: (signal: AbortSignal) => Promise<void>,
  log: Logger,
  opts: { jitterFirst?: boolean; spread?: number; failures?: FailureLog; subject?: string } = {},
): Runnable {
  const slotMs = periodSlotMs(everyMs);
  const subject = `${name}|${opts.subject ?? ""}`;
  const fields = { task: name };
  return {
    name,
    async start(signal) {
      // One abort listener for the task's life (not one per wait): it ends the wait under way.
      let cancel: (() => void) | undefined;
      let wake: ((ok: boolean) => void) | undefined;
      const unlisten = onAbort(signal, () => {
        cancel?.();
        wake?.(false);
      });
      const pause = (ms: number): Promise<boolean> =>
        signal.aborted
          ? Promise.resolve(false)
          : new Promise((resolve) => {
              wake = resolve;
              cancel = slottedTimeout(() => resolve(true), ms, slotMs);
            });
      try {
        if (opts.jitterFirst && !(await pause(Math.random() * everyMs))) return;
        const failures = opts.failures ?? new FailureLog(log);
        while (!signal.aborted) {
          try {
            await fn(signal);
            failures.recovered(TASK_FAILED, subject, fields, log);
          } catch (err) {
            if (signal.aborted) break;
            failures.failed(TASK_FAILED, subject, err, fields, log);
          }
          if (!(await pause(opts.spread ? everyMs * (1 - opts.spread * Math.random()) : everyMs))) break;
        }
      } finally {
        unlisten();
      }
    },
  };
}
