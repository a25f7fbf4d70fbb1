import { performance } from "node:perf_hooks";

/**
 * How long to wait before a key is retried (client-go's RateLimiter).
 * `when` records a failure and returns the delay in ms; `forget` clears the
 * key's history once it succeeded; `numRequeues` is its failure count.
 */
export interface RateLimiter<K = string> {
  when(key: K): number;
  forget(key: K): void;
  numRequeues(key: K): number;
}

/**
 * Per-key exponential backoff: baseMs · 2^failures, capped at maxMs
 * (client-go's ItemExponentialFailureRateLimiter; defaults 5 ms … 1000 s).
 */
export function exponentialBackoff<K = string>(baseMs = 5, maxMs = 1000 * 1000): RateLimiter<K> {
  const failures = new Map<K, number>();
  return {
    when(key: K): number {
      const n = failures.get(key) ?? 0;
      failures.set(key, n + 1);
      // 2^n overflows to Infinity for large n; the cap handles it.
      return Math.min(maxMs, baseMs * 2 ** n);
    },
    forget(key: K): void {
      failures.delete(key);
    },
    numRequeues(key: K): number {
      return failures.get(key) ?? 0;
    },
  };
}

/**
 * An overall token bucket shared by all keys: `burst` retries at once, then
 * `qps` per second; `when` reserves a token and returns how long until it is
 * available (client-go's BucketRateLimiter over rate.Limiter; defaults 10 qps,
 * burst 100). Keys have no history: `forget` does nothing, `numRequeues` is 0.
 *
 * @param now the clock in ms (tests)
 */
export function bucketRateLimiter<K = string>(qps = 10, burst = 100, now: () => number = () => performance.now()): RateLimiter<K> {
  let tokens = burst;
  let last = now();
  return {
    when(): number {
      const t = now();
      tokens = Math.min(burst, tokens + ((t - last) * qps) / 1000);
      last = t;
      tokens -= 1;
      return tokens >= 0 ? 0 : (-tokens * 1000) / qps;
    },
    forget(): void {},
    numRequeues(): number {
      return 0;
    },
  };
}

/** The longest delay of several limiters (client-go's MaxOfRateLimiter); forget and count across all. */
export function maxOf<K = string>(...limiters: RateLimiter<K>[]): RateLimiter<K> {
  return {
    when(key: K): number {
      let d = 0;
      for (const l of limiters) d = Math.max(d, l.when(key));
      return d;
    },
    forget(key: K): void {
      for (const l of limiters) l.forget(key);
    },
    numRequeues(key: K): number {
      let n = 0;
      for (const l of limiters) n = Math.max(n, l.numRequeues(key));
      return n;
    },
  };
}

/**
 * client-go's DefaultControllerRateLimiter: per-key exponential backoff
 * 5 ms … 1000 s, and an overall bucket of 10 qps with a burst of 100.
 */
export function defaultControllerRateLimiter<K = string>(): RateLimiter<K> {
  return maxOf<K>(exponentialBackoff<K>(5, 1000 * 1000), bucketRateLimiter<K>(10, 100));
}
