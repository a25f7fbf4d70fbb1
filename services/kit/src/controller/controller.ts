import { performance } from "node:perf_hooks";
import type { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Runnable } from "../lifecycle/index.js";
import { FailureLog, type Logger } from "../log/index.js";
import { exponentialBuckets, getOrCreateCounter, getOrCreateGauge, getOrCreateHistogram } from "../metrics/index.js";
import { WorkQueue } from "../workqueue/index.js";
import { isTerminalError, type Result } from "./result.js";

/** Reconciles one key: make the world match the object's spec. */
export type Reconcile = (key: string, signal: AbortSignal) => Promise<Result | void>;

/** The constant message of a failed reconcile. */
const RECONCILE_FAILED = "reconcile failed";

/** Options of {@link Controller}. */
export interface ControllerOptions {
  /** Names the logs (`controller` field), the queue metrics and the controller metrics. */
  name: string;
  reconcile: Reconcile;
  /** Concurrent reconciles (default 2); one key is never reconciled twice at once. */
  workers?: number;
  log: Logger;
  /** Default: a new WorkQueue with the default controller rate limiter. */
  queue?: WorkQueue<string>;
  /** Export reconcile metrics (and, for a queue it creates, queue metrics). */
  registry?: Registry;
  /**
   * Where failed reconciles are logged (kit/log FailureLog): a few whole lines a window, then a summary. A
   * process's many controllers (hollow nodes) share one. Default: one of the controller's own.
   */
  failures?: FailureLog;
}

/** What the controller did with a key after a reconcile: the metric label too. */
export type Outcome = "success" | "requeue" | "requeue_after" | "error" | "terminal_error";

interface ControllerMetrics {
  total: Counter<"controller" | "result">;
  duration: Histogram<"controller">;
  errors: Counter<"controller">;
  terminal: Counter<"controller">;
  active: Gauge<"controller">;
}

/**
 * Runs reconciles off a work queue, controller-runtime style: `workers`
 * loops of `get → reconcile → done`, with the Result or error mapped onto
 * the queue in one place ({@link Controller.settle}). On abort the queue
 * shuts down with drain (in-flight reconciles finish; their signal is
 * aborted) and `start` resolves once every worker returned.
 */
export class Controller implements Runnable {
  /** The controller's name. */
  readonly name: string;
  private readonly reconcile: Reconcile;
  private readonly workers: number;
  private readonly log: Logger;
  private readonly q: WorkQueue<string>;
  private readonly m: ControllerMetrics | undefined;
  private readonly failures: FailureLog;
  private started = false;

  constructor(opts: ControllerOptions) {
    this.name = opts.name;
    this.reconcile = opts.reconcile;
    this.workers = Math.max(1, Math.floor(opts.workers ?? 2));
    this.log = opts.log.child({ controller: opts.name });
    this.failures = opts.failures ?? new FailureLog(this.log);
    this.q = opts.queue ?? new WorkQueue<string>(opts.registry ? { metrics: { registry: opts.registry, name: opts.name } } : {});
    if (opts.registry) {
      const r = opts.registry;
      this.m = {
        total: getOrCreateCounter(r, "controller_runtime_reconcile_total", "Reconciles by controller and result.", ["controller", "result"]),
        duration: getOrCreateHistogram(
          r,
          "controller_runtime_reconcile_time_seconds",
          "How long a reconcile takes.",
          ["controller"],
          exponentialBuckets(0.001, 2, 16),
        ),
        errors: getOrCreateCounter(r, "controller_runtime_reconcile_errors_total", "Reconciles that failed.", ["controller"]),
        terminal: getOrCreateCounter(r, "controller_runtime_terminal_reconcile_errors_total", "Reconciles that failed with a terminal error.", ["controller"]),
        active: getOrCreateGauge(r, "controller_runtime_active_workers", "Workers currently running a reconcile.", ["controller"]),
      };
    }
  }

  /** The controller's queue (informer handlers add keys here). */
  get queue(): WorkQueue<string> {
    return this.q;
  }

  /** Queues `key` for a reconcile. */
  enqueue(key: string): void {
    this.q.add(key);
  }

  /** Queues `key` for a reconcile after `ms`. */
  enqueueAfter(key: string, ms: number): void {
    this.q.addAfter(key, ms);
  }

  /** Runs the workers until `signal` aborts, then drains the queue. Only once. */
  async start(signal: AbortSignal): Promise<void> {
    if (this.started) throw new Error(`controller ${this.name} already started`);
    this.started = true;
    const onAbort = (): void => {
      this.q.shutDownWithDrain().catch(() => {});
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    this.log.info({ workers: this.workers }, "controller starting");
    try {
      await Promise.all(Array.from({ length: this.workers }, () => this.worker(signal)));
      await this.q.shutDownWithDrain();
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
    this.log.info("controller stopped");
  }

  private async worker(signal: AbortSignal): Promise<void> {
    for (;;) {
      // No signal to get: the abort shuts the queue down (start's listener), which wakes an idle getter with undefined —
      // one listener per controller rather than one added and removed per key (thousands of hollow nodes' controllers).
      const key = await this.q.get();
      if (key === undefined) return;
      if (signal.aborted) {
        // Shutting down: keys still queued are dropped, not reconciled.
        this.q.done(key);
        return;
      }
      await this.process(key, signal);
    }
  }

  private async process(key: string, signal: AbortSignal): Promise<void> {
    const started = performance.now();
    this.m?.active.inc({ controller: this.name });
    let outcome: Outcome;
    try {
      const result = await this.reconcile(key, signal);
      outcome = this.settle(key, { result });
    } catch (err: unknown) {
      outcome = this.settle(key, { err, aborted: signal.aborted });
    } finally {
      this.q.done(key);
      this.m?.active.dec({ controller: this.name });
    }
    if (this.m) {
      this.m.duration.observe({ controller: this.name }, (performance.now() - started) / 1000);
      this.m.total.inc({ controller: this.name, result: outcome });
      if (outcome === "error" || outcome === "terminal_error") this.m.errors.inc({ controller: this.name });
      if (outcome === "terminal_error") this.m.terminal.inc({ controller: this.name });
    }
  }

  /**
   * The one place a reconcile's Result or error becomes queue operations:
   * done → forget; requeueAfter → forget + addAfter; requeue → addRateLimited;
   * error → log + addRateLimited; TerminalError → log + forget.
   * An error while shutting down is logged at debug and not retried.
   */
  private settle(key: string, r: { result: Result | void } | { err: unknown; aborted: boolean }): Outcome {
    if ("err" in r) {
      const { err } = r;
      if (isTerminalError(err)) {
        this.log.error({ key, err }, "reconcile failed terminally");
        this.q.forget(key);
        return "terminal_error";
      }
      if (r.aborted) {
        this.log.debug({ key, err }, "reconcile interrupted by shutdown");
        return "error";
      }
      this.failures.failed(RECONCILE_FAILED, key, err, { key, requeues: this.q.numRequeues(key) }, this.log, "error");
      this.q.addRateLimited(key);
      return "error";
    }
    this.failures.recovered(RECONCILE_FAILED, key, { key }, this.log);
    const result = r.result ?? {};
    const after = result.requeueAfterMs ?? 0;
    if (after > 0) {
      this.q.forget(key);
      this.q.addAfter(key, after);
      return "requeue_after";
    }
    if (result.requeue) {
      this.q.addRateLimited(key);
      return "requeue";
    }
    this.q.forget(key);
    return "success";
  }
}
