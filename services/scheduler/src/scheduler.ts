// The scheduler actor: informers feed the cache and the queue; workers pop
// a pod, decide on the cache (synchronously, then assume), and bind through
// the api. A 409 on bind means someone else (another replica) got there
// first: drop the assumption and let the informer tell the truth.
import { bindingRefusalOf, DISRUPTION_TARGET, isConflict, isNotFound, keyOf, splitKey, withPodCondition } from "@choreo/kit";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { ApiClient } from "@choreo/kit/client";
import type { Node, ObjectReference, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Cache } from "@choreo/kit/informer";
import { onAbort, type Runnable } from "@choreo/kit/lifecycle";
import { FailureLog, type Logger } from "@choreo/kit/log";
import type { Registry } from "prom-client";
import { schedulerMetrics, type SchedulerMetrics } from "./metrics.js";
import { SchedulerCache } from "./cache.js";
import type { EventRecorder } from "@choreo/kit/events";
import { podInfo, type PodInfo, type Snapshot } from "./framework.js";
import { canPreempt, findPreemption, nodeWith, priorityOf } from "./preemption.js";
import { SchedulingQueue, type QueueOptions } from "./queue.js";
import { failureMessage, schedule } from "./stack.js";

export interface SchedulerOptions {
  /** The api writes: bind, delete (preemption victims), patch (nominatedNodeName). */
  client: Pick<ApiClient, "bindOnly" | "delete" | "patch">;
  pods: Cache<Pod>;
  nodes: Cache<Node>;
  events: Pick<EventRecorder, "emit">;
  log: Logger;
  /** Where attempts (choreo_scheduler_schedule_attempts_total, scheduler_scheduling_attempt_duration_seconds) and scheduler_pending_pods go. */
  registry?: Registry;
  schedulerName?: string;
  workers?: number;
  queue?: QueueOptions;
}

/** A pod this scheduler should place. */
export function wantsScheduling(p: Pod, schedulerName: string): boolean {
  return (
    !p.spec?.nodeName &&
    !p.metadata?.deletionTimestamp &&
    (p.spec?.schedulerName || "default-scheduler") === schedulerName &&
    p.status?.phase !== "Succeeded" &&
    p.status?.phase !== "Failed"
  );
}

/** The parts of a node that can change a scheduling decision (not heartbeats). */
function nodeShape(n: Node): string {
  const ready = n.status?.conditions.find((c) => c.type === "Ready")?.status;
  return JSON.stringify([n.metadata?.labels, n.spec?.taints, n.spec?.unschedulable, n.status?.allocatable, ready]);
}

export const podRef = (p: Pod): ObjectReference => ({
  kind: "Pod",
  apiVersion: "v1",
  namespace: p.metadata?.namespace ?? "",
  name: p.metadata?.name ?? "",
  uid: p.metadata?.uid ?? "",
  resourceVersion: "",
  fieldPath: "",
});

/** The constant message of a failed scheduling attempt. */
const SCHEDULING_FAILED = "scheduling failed; retrying";

export class Scheduler implements Runnable {
  readonly cache = new SchedulerCache();
  readonly queue: SchedulingQueue;
  readonly name: string;
  readonly stats = { scheduled: 0, unschedulable: 0, conflicts: 0, errors: 0 };
  private readonly attempts: SchedulerMetrics | undefined;
  private rotate = 0;
  /** Failed attempts are logged a few whole a window, then summarised: with the api away every pod of a burst fails. */
  private readonly failures: FailureLog;

  constructor(private readonly opts: SchedulerOptions) {
    this.name = opts.schedulerName ?? "default-scheduler";
    this.failures = new FailureLog(opts.log);
    this.queue = new SchedulingQueue(opts.queue);
    this.attempts = opts.registry && schedulerMetrics(opts.registry, () => this.queue.pending());
    const enqueue = (p: Pod) => this.queue.add({ key: keyOf(p.metadata!), priority: p.spec?.priority ?? 0, created: p.metadata?.creationTimestamp ?? "" });
    opts.pods.addEventHandler({
      onAdd: (p) => {
        this.cache.setPod(p);
        if (wantsScheduling(p, this.name)) enqueue(p);
      },
      onUpdate: (_o, p) => {
        this.cache.setPod(p);
        if (wantsScheduling(p, this.name)) enqueue(p);
        else {
          this.queue.delete(keyOf(p.metadata!));
          this.nominated.delete(keyOf(p.metadata!));
        }
      },
      onDelete: (p) => {
        const key = keyOf(p.metadata!);
        this.cache.deletePod(key);
        this.queue.delete(key);
        this.nominated.delete(key);
        if (p.spec?.nodeName) this.queue.moveAll();
      },
    });
    opts.nodes.addEventHandler({
      onAdd: (n) => {
        this.cache.setNode(n);
        this.queue.moveAll();
      },
      onUpdate: (o, n) => {
        this.cache.setNode(n);
        if (nodeShape(o) !== nodeShape(n)) this.queue.moveAll();
      },
      onDelete: (n) => this.cache.deleteNode(n.metadata?.name ?? ""),
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    await Promise.all([this.opts.pods.waitForSync(signal), this.opts.nodes.waitForSync(signal)]);
    onAbort(signal, () => this.queue.close());
    const workers = Array.from({ length: this.opts.workers ?? 8 }, () => this.work(signal));
    await Promise.all(workers);
  }

  private async work(signal: AbortSignal): Promise<void> {
    for (;;) {
      const q = await this.queue.pop();
      if (!q || signal.aborted) return;
      const started = performance.now();
      try {
        await this.scheduleOne(q.key, started);
        this.failures.recovered(SCHEDULING_FAILED, q.key);
      } catch (err) {
        this.stats.errors++;
        this.attempts?.attempt("error", started);
        this.failures.failed(SCHEDULING_FAILED, q.key, err, { pod: q.key });
        this.cache.forget(q.key);
        this.queue.retry(q.key);
      }
    }
  }

  /** Decide (synchronously, then assume) and bind one pod. */
  async scheduleOne(key: string, started = performance.now()): Promise<void> {
    const pod = this.opts.pods.get(key);
    if (!pod || !wantsScheduling(pod, this.name) || this.cache.isAssumed(key)) {
      this.queue.done(key);
      return;
    }
    const info = podInfo(pod);
    const decision = schedule(info, this.withNominated(info), { start: this.rotate++ });
    if ("reasons" in decision) {
      this.stats.unschedulable++;
      this.attempts?.attempt("unschedulable", started);
      this.queue.unschedulable(key);
      let message = failureMessage(decision);
      if (canPreempt(info)) message += ` ${await this.preempt(info, decision.nodes)}`;
      this.opts.log.debug({ pod: key, message }, "pod unschedulable");
      this.opts.events.emit(podRef(pod), "Warning", "FailedScheduling", message);
      return;
    }
    this.cache.assume(info, decision.node);
    const { namespace, name } = splitKey(key);
    try {
      await this.sendSoon(() => this.opts.client.bindOnly(namespace, name, decision.node, info.uid));
    } catch (err) {
      this.cache.forget(key);
      if (bindingRefusalOf(err)) {
        // The api refused (typed cause): the node is full by now (another scheduler was faster) or its lock was busy. Try again on fresh state.
        this.stats.conflicts++;
        this.attempts?.attempt("conflict", started);
        this.queue.retry(key);
        this.opts.log.debug({ pod: key, node: decision.node, why: bindingRefusalOf(err) }, "bind refused by the node; retrying");
        return;
      }
      if (isConflict(err) || isNotFound(err)) {
        // Bound by another replica, recreated, or gone: the informer brings the truth.
        this.stats.conflicts++;
        this.attempts?.attempt("conflict", started);
        this.queue.done(key);
        this.opts.log.debug({ pod: key, node: decision.node }, "bind conflict; dropped");
        return;
      }
      throw err;
    }
    this.stats.scheduled++;
    this.attempts?.attempt("scheduled", started);
    this.queue.done(key);
    this.opts.log.debug({ pod: key, node: decision.node }, "pod bound");
    const ref = podRef(pod);
    // With the other Events of this turn (its first write starts in emit): one socket write for them, as for the binds.
    this.soon(() => this.opts.events.emit(ref, "Normal", "Scheduled", `Successfully assigned ${key} to ${decision.node}`));
  }

  /** Requests decided in this turn of the event loop, waiting to go out together. */
  private waiting: (() => void)[] = [];

  /** Runs `start` at the end of this turn of the event loop, with every other request started in it (see sendSoon). */
  private soon(start: () => void): void {
    if (this.waiting.length === 0) setImmediate(() => this.sendAll());
    this.waiting.push(start);
  }

  /**
   * Starts `send` at the end of this turn of the event loop (setImmediate),
   * with every other request decided in it: nats.js writes its socket once
   * per microtask checkpoint, and workers deciding pods of one informer batch
   * reach their bind in different checkpoints, each a write (syscall) of its
   * own. The pod is assumed before, so nothing else waits for this.
   */
  private sendSoon<T>(send: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => this.soon(() => void send().then(resolve, reject)));
  }

  private sendAll(): void {
    const all = this.waiting;
    this.waiting = [];
    for (const start of all) {
      try {
        start();
      } catch (err) {
        this.opts.log.warn({ err }, "a deferred request failed to start");
      }
    }
  }

  /** Pods this scheduler nominated to a node after evicting for them: key → node and the pod. */
  private readonly nominated = new Map<string, { node: string; info: PodInfo }>();

  /**
   * The cache as `pod` must see it: pods of higher or equal priority nominated
   * to a node (room made for them by preemption) count there, so a
   * lower-priority pod cannot take the room first (Kubernetes does the same).
   */
  private withNominated(pod: PodInfo): Snapshot {
    if (this.nominated.size === 0) return this.cache;
    const extra = new Map<string, PodInfo[]>();
    for (const [key, { node, info }] of this.nominated) {
      if (key === pod.key || priorityOf(info) < priorityOf(pod)) continue;
      extra.set(node, [...(extra.get(node) ?? []), info]);
    }
    if (extra.size === 0) return this.cache;
    return { nodes: this.cache.nodes.map((n) => (extra.has(n.name) ? nodeWith(n, [...n.pods.values(), ...(extra.get(n.name) ?? [])]) : n)) };
  }

  /**
   * Marks a victim DisruptionTarget (PreemptionByScheduler) before its
   * deletion, as Kubernetes' preemption does: a strategic merge patch of its
   * status, the condition merged by type beside the node agent's.
   */
  private async markVictim(preemptor: PodInfo, victim: PodInfo): Promise<void> {
    const change = {
      type: DISRUPTION_TARGET,
      status: "True",
      reason: "PreemptionByScheduler",
      message: `${preemptor.pod.spec?.schedulerName || this.name}: preempting to accommodate a higher priority pod`,
    };
    const cond = withPodCondition(victim.pod.status, change, nowRfc3339())?.conditions.find((c) => c.type === DISRUPTION_TARGET);
    if (!cond) return;
    const { namespace, name } = splitKey(victim.key);
    const patch = { status: { conditions: [{ ...change, lastTransitionTime: cond.lastTransitionTime }] } };
    await this.opts.client.patch("pods", namespace, name, "application/strategic-merge-patch+json", patch, "status");
  }

  /** Evicts the fewest lower-priority pods so `info` fits, once; the message part for FailedScheduling. */
  private async preempt(info: PodInfo, nodes: number): Promise<string> {
    const waiting = this.nominated.get(info.key)?.node;
    if (waiting && [...(this.cache.node(waiting)?.pods.values() ?? [])].some((p) => p.pod.metadata?.deletionTimestamp)) {
      return `preemption: waiting for the pods evicted from node ${waiting}.`;
    }
    const plan = findPreemption(info, this.cache);
    if (!plan) return `preemption: 0/${nodes} nodes are available: ${nodes} No preemption victims found for incoming pod.`;
    this.nominated.set(info.key, { node: plan.node, info });
    if (this.nominated.size > 10_000) this.nominated.clear();
    for (const v of plan.victims) {
      const { namespace, name } = splitKey(v.key);
      try {
        await this.markVictim(info, v);
        await this.opts.client.delete("pods", namespace, name, { preconditions: { uid: v.uid, resourceVersion: "" } });
        this.opts.events.emit(podRef(v.pod), "Normal", "Preempted", `Preempted by ${info.key} on node ${plan.node}`);
      } catch (err) {
        if (!isNotFound(err) && !isConflict(err)) throw err;
      }
    }
    const { namespace, name } = splitKey(info.key);
    await this.opts.client
      .patch("pods", namespace, name, "application/merge-patch+json", { status: { nominatedNodeName: plan.node } }, "status")
      .catch((err: unknown) => {
        this.opts.log.warn({ err, pod: info.key }, "nominatedNodeName not recorded");
      });
    this.opts.log.info({ pod: info.key, node: plan.node, victims: plan.victims.map((v) => v.key) }, "pods preempted");
    return `preemption: evicting ${plan.victims.length} lower-priority pod(s) on node ${plan.node}.`;
  }
}
