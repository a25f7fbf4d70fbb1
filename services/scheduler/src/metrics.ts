// The scheduler's metrics, in kube-scheduler's names where it has one:
// attempts by result, each attempt's duration, and the pods waiting by queue.
import { exponentialBuckets, getOrCreateCounter, getOrCreateHistogram } from "@choreo/kit/metrics";
import { Gauge, type Registry } from "prom-client";

/** What a scheduling attempt came to (the `result` label). */
export type AttemptResult = "scheduled" | "unschedulable" | "conflict" | "error";

/** The pods waiting, by sub-queue (SchedulingQueue.pending()). */
export type Pending = Record<"active" | "backoff" | "unschedulable" | "inflight", number>;

/** Where a scheduler reports its attempts. */
export interface SchedulerMetrics {
  /** One attempt ended with `result`; it began at `started` (performance.now()). */
  attempt(result: AttemptResult, started: number): void;
}

/** The scheduler's metrics in `registry`; `pending` is read when scraped (scheduler_pending_pods{queue}). */
export function schedulerMetrics(registry: Registry, pending: () => Pending): SchedulerMetrics {
  const attempts = getOrCreateCounter(
    registry,
    "choreo_scheduler_schedule_attempts_total",
    "Scheduling attempts by result: scheduled, unschedulable, conflict (a bind lost a race), error",
    ["result"],
  );
  const duration = getOrCreateHistogram(
    registry,
    "scheduler_scheduling_attempt_duration_seconds",
    "Scheduling attempt latency (the decision and the bind) by result, as kube-scheduler's.",
    ["result"],
    exponentialBuckets(0.0001, 2, 16), // 100 µs … 3.3 s
  );
  // One scheduler per registry reports the queue (a second one in the same process shares the first's gauge).
  if (!registry.getSingleMetric("scheduler_pending_pods"))
    new Gauge({
      name: "scheduler_pending_pods",
      help: "Pending pods by queue: active, backoff, unschedulable, and inflight (being scheduled now).",
      labelNames: ["queue"],
      registers: [registry],
      collect() {
        for (const [queue, n] of Object.entries(pending())) this.set({ queue }, n);
      },
    });
  return {
    attempt(result, started) {
      attempts.inc({ result });
      duration.observe({ result }, (performance.now() - started) / 1000);
    },
  };
}
