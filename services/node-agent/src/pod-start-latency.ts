// Pod start latency, as the kubelet's kubelet_pod_start_duration_seconds
// (this agent first starting the pod → the first status it writes saying
// Running) and the pod startup SLO's view (the pod's creation → Running,
// what a user waits: scheduling, the watch to the node, the start).
import type { Pod, PodStatus } from "@choreo/kit/gen/choreo/core/v1/core";
import { exponentialBuckets, getOrCreateHistogram } from "@choreo/kit/metrics";
import type { Histogram, Registry } from "prom-client";

/** Seconds from 5 ms to ~5 min. */
const BUCKETS = exponentialBuckets(0.005, 2, 17);

/** Observes each pod this agent starts once, when it is first reported Running. */
export class PodStartLatency {
  private readonly startedAt = new Map<string, number>();
  private readonly sinceStart: Histogram;
  private readonly sinceCreation: Histogram;

  constructor(
    registry: Registry,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.sinceStart = getOrCreateHistogram(
      registry,
      "kubelet_pod_start_duration_seconds",
      "From the node agent starting a pod to its first status saying Running.",
      [],
      BUCKETS,
    );
    this.sinceCreation = getOrCreateHistogram(
      registry,
      "choreo_pod_startup_latency_seconds",
      "From a pod's creationTimestamp (whole seconds) to the node agent's first status saying Running: the pod startup SLO.",
      [],
      BUCKETS,
    );
  }

  /** This agent is starting the pod `uid` now (not adopting one that already ran: those are not measured). */
  starting(uid: string): void {
    if (!this.startedAt.has(uid)) this.startedAt.set(uid, this.now());
  }

  /** The status about to be written for `pod`: the first Running one of a pod this agent started is observed. */
  reported(pod: Pod, status: Pick<PodStatus, "phase">): void {
    const uid = pod.metadata?.uid ?? "";
    const started = this.startedAt.get(uid);
    if (started === undefined || status.phase !== "Running") return;
    this.startedAt.delete(uid);
    const now = this.now();
    this.sinceStart.observe((now - started) / 1000);
    const created = Date.parse(String(pod.metadata?.creationTimestamp ?? ""));
    if (Number.isFinite(created)) this.sinceCreation.observe(Math.max(0, now - created) / 1000);
  }

  /** The pod is gone or finished before running: drop what was kept. */
  forget(uid: string): void {
    this.startedAt.delete(uid);
  }
}
