/** Anything long-running: `start` resolves once the signal aborted and it drained. */
export interface Runnable {
  readonly name: string;
  start(signal: AbortSignal): Promise<void>;
}

/**
 * Runs all runnables until `signal` aborts. If one fails, the others are
 * aborted and the first error is thrown after all have settled.
 */
export async function runAll(runnables: Runnable[], signal: AbortSignal): Promise<void> {
  const inner = new AbortController();
  const stop = (): void => inner.abort();
  if (signal.aborted) inner.abort();
  signal.addEventListener("abort", stop, { once: true });
  let first: unknown;
  let failed = false;
  try {
    await Promise.all(
      runnables.map((r) =>
        r.start(inner.signal).catch((err: unknown) => {
          if (!failed) {
            failed = true;
            first = err instanceof Error ? err : new Error(`${r.name} failed: ${String(err)}`);
          }
          inner.abort();
        }),
      ),
    );
  } finally {
    signal.removeEventListener("abort", stop);
  }
  if (failed) throw first;
}

/** An AbortController aborted by the first SIGTERM/SIGINT; a second one exits with 130. */
export function signalController(opts: { exit?: (code: number) => void } = {}): AbortController {
  const ac = new AbortController();
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const onSignal = (): void => {
    if (ac.signal.aborted) exit(130);
    else ac.abort();
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  return ac;
}

/** Resolves true after `ms`, or false as soon as the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const done = (ok: boolean): void => {
      clearTimeout(t);
      signal?.removeEventListener("abort", onAbort);
      resolve(ok);
    };
    const onAbort = (): void => done(false);
    const t = setTimeout(() => done(true), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Exponential backoff with jitter. */
export function backoff(opts: { initialMs: number; maxMs: number; factor?: number; jitter?: number }): { next(): number; reset(): void } {
  let cur = opts.initialMs;
  return {
    next() {
      const j = opts.jitter ?? 0.2;
      const d = cur * (1 - j * Math.random());
      cur = Math.min(opts.maxMs, cur * (opts.factor ?? 2));
      return d;
    },
    reset() {
      cur = opts.initialMs;
    },
  };
}

/** The promise's value, or a rejection after `ms`. */
export async function shutdownWithTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, rej) => (t = setTimeout(() => rej(new Error(`timed out after ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(t);
  }
}

/** Cleanups run in reverse order, once. */
export class DisposableGroup implements AsyncDisposable {
  private readonly cleanups: (() => Promise<void> | void)[] = [];
  private disposed = false;

  use<T extends AsyncDisposable>(r: T): T {
    this.cleanups.push(async () => {
      await r[Symbol.asyncDispose]();
    });
    return r;
  }

  defer(fn: () => Promise<void> | void): void {
    this.cleanups.push(fn);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    const errors: unknown[] = [];
    for (const fn of this.cleanups.reverse()) {
      try {
        await fn();
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length === 1) throw errors[0];
    if (errors.length > 1) throw new AggregateError(errors, "several cleanups failed");
  }
}
