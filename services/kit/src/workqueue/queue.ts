import { performance } from "node:perf_hooks";
import type { Counter, Gauge, Histogram, Registry } from "prom-client";
import { exponentialBuckets, getOrCreateCounter, getOrCreateGauge, getOrCreateHistogram } from "../metrics/index.js";
import { defaultControllerRateLimiter, type RateLimiter } from "./rate-limiter.js";
import { TimerHeap } from "./timer-heap.js";

/** Options of {@link WorkQueue}. */
export interface WorkQueueOptions<K> {
  /** Used by `addRateLimited` (default: {@link defaultControllerRateLimiter}). */
  rateLimiter?: RateLimiter<K>;
  /** Export Prometheus metrics, labelled `name`, into `registry`. */
  metrics?: { registry: Registry; name: string };
  /** The clock in ms (default `performance.now`). */
  now?: () => number;
}

/** Counters for tests and debugging. */
export interface WorkQueueStats {
  /** Keys waiting to be handed out (`len()`). */
  depth: number;
  /** Keys handed out and not yet `done`. */
  inFlight: number;
  /** Keys waiting for their `addAfter` time. */
  delayed: number;
  /** Keys dirty (queued, or re-added while in flight). */
  dirty: number;
  /** Getters waiting for a key. */
  waiters: number;
  /** Accepted `add` calls (including ones that collapsed). */
  adds: number;
  /** `addRateLimited` calls. */
  retries: number;
  /** Keys handed out by `get`. */
  gets: number;
}

interface QueueMetrics {
  depth: Gauge<"name">;
  adds: Counter<"name">;
  latency: Histogram<"name">;
  workDuration: Histogram<"name">;
  retries: Counter<"name">;
  name: string;
}

type Waiter<K> = (key: K | undefined) => void;

/**
 * client-go's work queue (a rate-limiting, delaying queue of keys):
 *
 * - FIFO; adding a key that is already queued does nothing (adds collapse);
 * - a key handed out by `get` is *in flight* until `done(key)`; it is never
 *   handed to a second getter meanwhile — if it is added again while in
 *   flight it is queued once more exactly when `done` is called;
 * - `addAfter` waits on a timer heap (one timer, the earliest wins);
 *   `addRateLimited` asks the rate limiter for the delay, `forget` resets it;
 * - after `shutDown`, adds are ignored, getters get the keys still queued
 *   and then `undefined`; `shutDownWithDrain` also waits for in-flight keys
 *   to be `done`.
 */
export class WorkQueue<K = string> {
  private items: (K | undefined)[] = [];
  private head = 0;
  private readonly dirty = new Set<K>();
  private readonly processing = new Set<K>();
  private readonly waiters: Waiter<K>[] = [];
  private readonly delayed: TimerHeap<K>;
  private readonly rateLimiter: RateLimiter<K>;
  private readonly now: () => number;
  private readonly addedAt = new Map<K, number>();
  private readonly startedAt = new Map<K, number>();
  private readonly m: QueueMetrics | undefined;
  private shuttingDown = false;
  private drained: { promise: Promise<void>; resolve: () => void } | undefined;
  private counts = { adds: 0, retries: 0, gets: 0 };

  constructor(opts: WorkQueueOptions<K> = {}) {
    this.now = opts.now ?? (() => performance.now());
    this.rateLimiter = opts.rateLimiter ?? defaultControllerRateLimiter<K>();
    this.delayed = new TimerHeap<K>((key) => this.add(key), this.now);
    if (opts.metrics) {
      const r = opts.metrics.registry;
      const buckets = exponentialBuckets(1e-8, 10, 10); // 10 ns … 10 s, like client-go
      this.m = {
        name: opts.metrics.name,
        depth: getOrCreateGauge(r, "workqueue_depth", "Current depth of the work queue.", ["name"]),
        adds: getOrCreateCounter(r, "workqueue_adds_total", "Adds handled by the work queue.", ["name"]),
        latency: getOrCreateHistogram(r, "workqueue_queue_duration_seconds", "How long a key waits in the queue before it is handed out.", ["name"], buckets),
        workDuration: getOrCreateHistogram(r, "workqueue_work_duration_seconds", "How long processing a key takes (get to done).", ["name"], buckets),
        retries: getOrCreateCounter(r, "workqueue_retries_total", "Rate-limited re-adds handled by the work queue.", ["name"]),
      };
      this.m.depth.set({ name: this.m.name }, 0);
    }
  }

  /** Queues `key` unless it is already queued; if in flight, it is queued again after `done`. Ignored after shutdown. */
  add(key: K): void {
    if (this.shuttingDown) return;
    this.counts.adds++;
    this.m?.adds.inc({ name: this.m.name });
    if (this.dirty.has(key)) return;
    this.dirty.add(key);
    this.addedAt.set(key, this.now());
    if (this.processing.has(key)) return;
    this.enqueue(key);
  }

  /** Adds `key` once `ms` passed (at once if `ms <= 0`); a key already waiting keeps the earlier time. */
  addAfter(key: K, ms: number): void {
    if (this.shuttingDown) return;
    if (!(ms > 0)) {
      this.add(key);
      return;
    }
    this.delayed.scheduleIn(key, ms);
  }

  /** Adds `key` after the delay its rate limiter decides (records a failure). */
  addRateLimited(key: K): void {
    if (this.shuttingDown) return;
    this.counts.retries++;
    this.m?.retries.inc({ name: this.m.name });
    this.addAfter(key, this.rateLimiter.when(key));
  }

  /** Clears the rate limiter's history of `key` (it succeeded, or we give up). */
  forget(key: K): void {
    this.rateLimiter.forget(key);
  }

  /** How many times `key` was rate-limited since its last `forget`. */
  numRequeues(key: K): number {
    return this.rateLimiter.numRequeues(key);
  }

  /**
   * The next key, once there is one; it stays in flight until `done(key)`.
   * Resolves `undefined` when the queue shut down and is empty, or when
   * `signal` aborts.
   */
  get(signal?: AbortSignal): Promise<K | undefined> {
    if (signal?.aborted) return Promise.resolve(undefined);
    if (this.head < this.items.length) return Promise.resolve(this.handOut(this.dequeue()));
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise<K | undefined>((resolve) => {
      const onAbort = (): void => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(undefined);
      };
      const waiter: Waiter<K> = (key) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(key);
      };
      this.waiters.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Marks `key` processed; if it was added meanwhile, it is queued again. */
  done(key: K): void {
    if (!this.processing.delete(key)) return;
    const started = this.startedAt.get(key);
    this.startedAt.delete(key);
    if (this.m && started !== undefined) this.m.workDuration.observe({ name: this.m.name }, (this.now() - started) / 1000);
    if (this.dirty.has(key)) this.enqueue(key);
    if (this.drained && this.processing.size === 0) this.drained.resolve();
  }

  /** Keys waiting to be handed out (not counting delayed or in-flight ones). */
  len(): number {
    return this.items.length - this.head;
  }

  /** Stops accepting adds, drops delayed keys, and wakes idle getters with `undefined`. */
  shutDown(): void {
    if (!this.shuttingDown) {
      this.shuttingDown = true;
      this.delayed.clear();
    }
    for (const w of this.waiters.splice(0)) w(undefined);
  }

  /** {@link shutDown}, then resolves once no key is in flight. */
  shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (!this.drained) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.drained = { promise, resolve };
    }
    if (this.processing.size === 0) this.drained.resolve();
    return this.drained.promise;
  }

  /** Whether shutdown began. */
  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Counters for tests and debugging. */
  stats(): WorkQueueStats {
    return {
      depth: this.len(),
      inFlight: this.processing.size,
      delayed: this.delayed.size,
      dirty: this.dirty.size,
      waiters: this.waiters.length,
      ...this.counts,
    };
  }

  /** Puts a dirty, idle key at the tail, or straight into a waiting getter (the queue is then empty). */
  private enqueue(key: K): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter(this.handOut(key));
      return;
    }
    this.items.push(key);
    this.m?.depth.inc({ name: this.m.name });
  }

  private dequeue(): K {
    const key = this.items[this.head] as K;
    this.items[this.head] = undefined;
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    this.m?.depth.dec({ name: this.m.name });
    return key;
  }

  /** Moves `key` from dirty to in flight. */
  private handOut(key: K): K {
    this.dirty.delete(key);
    this.processing.add(key);
    this.counts.gets++;
    const t = this.now();
    const added = this.addedAt.get(key);
    this.addedAt.delete(key);
    if (this.m && added !== undefined) this.m.latency.observe({ name: this.m.name }, (t - added) / 1000);
    this.startedAt.set(key, t);
    return key;
  }
}
