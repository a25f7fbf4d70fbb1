import { setMaxListeners } from "node:events";
/**
 * Anything long-running. `start` runs until `signal` aborts, drains, then
 * resolves; it rejects only on a failure the process cannot live with.
 */
export interface Runnable {
  readonly name: string;
  start(signal: AbortSignal): Promise<void>;
}

/** Options of {@link runAll}. */
export interface RunAllOptions {
  /**
   * Told, every `stoppingWarnMs` once `signal` aborted, which runnables have
   * not returned yet; and at once which one failed (the first error is
   * rethrown only once every runnable settled, which a stuck one delays).
   */
  log?: { warn(fields: object, msg: string): void; error?(fields: object, msg: string): void };
  /** Default 5 s. */
  stoppingWarnMs?: number;
  /**
   * Called at the first failure, as the others are aborted: a main aborts its
   * {@link signalController}'s controller with it, so the process's stop
   * timeout bounds a stop caused by a failure as it bounds one by a signal.
   */
  onFailure?: (err: unknown, name: string) => void;
}

/**
 * Runs all runnables concurrently until `signal` aborts. If one rejects (or
 * throws synchronously), the others are aborted through an internal
 * AbortController chained to `signal`, and the first error is rethrown once
 * every runnable has settled. With `log`, a stop that takes long names the
 * runnables still stopping.
 */
export async function runAll(runnables: readonly Runnable[], signal: AbortSignal, opts: RunAllOptions = {}): Promise<void> {
  const inner = new AbortController();
  // Each runnable (and what it starts) listens to this one signal: however many there are is not a leak.
  setMaxListeners(0, inner.signal);
  const stop = (): void => inner.abort(signal.reason);
  if (signal.aborted) stop();
  else signal.addEventListener("abort", stop, { once: true });
  let failed = false;
  let first: unknown;
  const running = new Set(runnables.map((r) => r.name));
  let warner: NodeJS.Timeout | undefined;
  const { log } = opts;
  if (log)
    onAbort(inner.signal, () => {
      warner = setInterval(() => log.warn({ runnables: [...running] }, "still stopping"), opts.stoppingWarnMs ?? 5_000);
      warner.unref();
    });
  try {
    await Promise.all(
      runnables.map(async (r) => {
        try {
          await r.start(inner.signal);
          running.delete(r.name);
        } catch (err: unknown) {
          running.delete(r.name);
          if (!failed) {
            failed = true;
            first = err instanceof Error ? err : new Error(`${r.name} failed: ${String(err)}`, { cause: err });
            inner.abort(first);
            log?.error?.({ err: first, runnable: r.name }, "runnable failed; stopping the others");
            opts.onFailure?.(first, r.name);
          }
          inner.abort(first);
        }
      }),
    );
  } finally {
    signal.removeEventListener("abort", stop);
    clearInterval(warner);
  }
  if (failed) throw first;
}

/** Options of {@link signalController}. */
export interface SignalControllerOptions {
  /** Called on the second signal, before exiting. */
  onSecond?: () => void;
  /** Replaces `process.exit` (tests). */
  exit?: (code: number) => void;
  /** The signals to listen to (default SIGTERM and SIGINT). */
  signals?: readonly NodeJS.Signals[];
  /**
   * The most a stop may take, from the first signal: then `onTimeout` is
   * called and the process exits with 1. A process whose server went away
   * can otherwise wait for good on a request nobody answers (a Redis command
   * has no timeout; a stopped nats-server never answers a drain's flush).
   * Nothing is lost by it: every process survives kill -9. Default none.
   */
  stopTimeoutMs?: number;
  /** Called before the exit of `stopTimeoutMs`. */
  onTimeout?: () => void;
}

/**
 * An AbortController aborted by the first SIGTERM/SIGINT; a second signal
 * calls `onSecond` and exits the process with 130. With `stopTimeoutMs`, a
 * stop still running that long after the controller aborted — the first
 * signal, or the process itself aborting it (a runnable failed:
 * {@link RunAllOptions.onFailure}) — exits with 1.
 */
export function signalController(opts: SignalControllerOptions = {}): AbortController {
  const ac = new AbortController();
  const exit = opts.exit ?? ((code: number): void => process.exit(code));
  const signals = opts.signals ?? ["SIGTERM", "SIGINT"];
  const onSignal = (sig: NodeJS.Signals): void => {
    if (!ac.signal.aborted) {
      ac.abort(new Error(`received ${sig}`));
      return;
    }
    for (const s of signals) process.off(s, onSignal);
    opts.onSecond?.();
    exit(130);
  };
  for (const s of signals) process.on(s, onSignal);
  const { stopTimeoutMs } = opts;
  if (stopTimeoutMs !== undefined)
    ac.signal.addEventListener(
      "abort",
      () =>
        setTimeout(() => {
          opts.onTimeout?.();
          exit(1);
        }, stopTimeoutMs).unref(),
      { once: true },
    );
  return ac;
}

/** `p`'s value, or undefined as soon as `signal` aborts (`p` then settles unheard): a wait a stop must not sit behind. */
export async function orAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return undefined;
  let stop = (): void => undefined;
  const aborted = new Promise<undefined>((resolve) => {
    stop = () => resolve(undefined);
    signal.addEventListener("abort", stop, { once: true });
  });
  try {
    return await Promise.race([p, aborted]);
  } finally {
    signal.removeEventListener("abort", stop);
  }
}

/** A process's stop timeout: CHOREO_STOP_TIMEOUT_MS when set (0: none), else `defaultMs`. */
export function stopTimeoutMs(defaultMs: number, env: NodeJS.ProcessEnv = process.env): number | undefined {
  const v = env["CHOREO_STOP_TIMEOUT_MS"];
  if (v === undefined || v === "") return defaultMs;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`CHOREO_STOP_TIMEOUT_MS: "${v}" is not a number of milliseconds`);
  return n === 0 ? undefined : n;
}

/** Resolves true after `ms`, or false as soon as `signal` aborts (never rejects). */
/**
 * Runs `fn` when `signal` aborts — at once if it already has. Code that
 * awaits between checking a signal and listening to it misses an abort that
 * lands in the gap, and then waits forever; this closes the gap. Returns the
 * function that removes the listener.
 */
export function onAbort(signal: AbortSignal, fn: () => void): () => void {
  if (signal.aborted) {
    fn();
    return () => undefined;
  }
  signal.addEventListener("abort", fn, { once: true });
  return () => signal.removeEventListener("abort", fn);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve(false);
      return;
    }
    const finish = (ok: boolean): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(ok);
    };
    const onAbort = (): void => finish(false);
    const timer = setTimeout(() => finish(true), Math.max(0, ms));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Options of {@link backoff}. */
export interface BackoffOptions {
  /** The first delay. */
  initialMs: number;
  /** The cap on the (un-jittered) delay. */
  maxMs: number;
  /** Growth per step (default 2). */
  factor?: number;
  /** Up to this fraction is added at random, never above `maxMs` (default 0.2). */
  jitter?: number;
  /** The random source, in [0, 1) (tests). */
  random?: () => number;
}

/** An exponential backoff: `next()` gives the delay to wait, `reset()` starts over. */
export interface Backoff {
  next(): number;
  reset(): void;
}

/**
 * Exponential backoff with jitter: delays initialMs, initialMs·factor, …,
 * capped at maxMs, each increased by up to `jitter` of itself (the result
 * never exceeds maxMs).
 */
export function backoff(opts: BackoffOptions): Backoff {
  const factor = opts.factor ?? 2;
  const jitter = opts.jitter ?? 0.2;
  const random = opts.random ?? Math.random;
  let current = Math.min(opts.initialMs, opts.maxMs);
  return {
    next(): number {
      const delay = Math.min(opts.maxMs, current * (1 + jitter * random()));
      current = Math.min(opts.maxMs, current * factor);
      return delay;
    },
    reset(): void {
      current = Math.min(opts.initialMs, opts.maxMs);
    },
  };
}

/** The promise's value, or a rejection ("timed out after N ms") once `ms` passed. */
export async function shutdownWithTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Cleanups, run in reverse order of registration, once. Every cleanup runs
 * even if earlier ones fail; one failure is rethrown as is, several as an
 * AggregateError. Use with `await using group = new DisposableGroup()`.
 */
export class DisposableGroup implements AsyncDisposable {
  private readonly cleanups: (() => Promise<void> | void)[] = [];
  private disposed = false;

  /** Registers a resource to dispose; returns it. */
  use<T extends AsyncDisposable>(resource: T): T {
    this.cleanups.push(async () => {
      await resource[Symbol.asyncDispose]();
    });
    return resource;
  }

  /** Registers a cleanup function. */
  defer(fn: () => Promise<void> | void): void {
    this.cleanups.push(fn);
  }

  /** Whether the group was disposed. */
  get isDisposed(): boolean {
    return this.disposed;
  }

  /** Runs the cleanups in reverse order (only the first call does anything). */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    const errors: unknown[] = [];
    for (const fn of this.cleanups.splice(0).reverse()) {
      try {
        await fn();
      } catch (err: unknown) {
        errors.push(err);
      }
    }
    if (errors.length === 1) throw errors[0];
    if (errors.length > 1) throw new AggregateError(errors, `${errors.length} cleanups failed`);
  }
}
