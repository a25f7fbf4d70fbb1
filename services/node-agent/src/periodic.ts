import type { Runnable } from "@choreo/kit/lifecycle";
import { sleep } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";

/**
 * A Runnable that calls `fn` every `everyMs` (after a random first delay up
 * to `everyMs` when `jitterFirst`, so that many hollow nodes do not beat in
 * step). A failing call is logged and tried again next period.
 */
export function periodic(
  name: string,
  everyMs: number,
  fn: (signal: AbortSignal) => Promise<void>,
  log: Logger,
  opts: { jitterFirst?: boolean } = {},
): Runnable {
  return {
    name,
    async start(signal) {
      if (opts.jitterFirst && !(await sleep(Math.random() * everyMs, signal))) return;
      while (!signal.aborted) {
        try {
          await fn(signal);
        } catch (err) {
          if (signal.aborted) break;
          log.warn({ err, task: name }, "periodic task failed");
        }
        if (!(await sleep(everyMs, signal))) break;
      }
    },
  };
}
