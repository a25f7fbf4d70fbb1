// Node lifecycle: a node whose Lease stops being renewed within the grace
// period gets Ready=Unknown and the unreachable NoExecute taint; after the
// eviction period its pods are deleted (a token bucket limits how many
// nodes are evicted per second); a Lease renewed again clears the taint (the
// node's agent sets Ready=True itself). Renewals are timed on this actor's
// clock (when it saw renewTime change), like Kubernetes, so clock skew
// between machines does not matter. Most nodes falling silent at once is a
// disruption (the control plane or the network, not the nodes): then no node
// is marked or evicted, as in Kubernetes' full/partial disruption states;
// when it ends, and when a term of leadership starts, every node gets a
// fresh grace period.
import { DISRUPTION_TARGET, isNotFound, keyOf, withPodCondition } from "@choreo/kit";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { ApiClient } from "@choreo/kit/client";
import { retryOnConflict } from "@choreo/kit/client";
import { Controller, done, requeueAfter, type Result } from "@choreo/kit/controller";
import type { Lease } from "@choreo/kit/gen/choreo/coordination/v1/coordination";
import type { Node, NodeCondition, Pod, Taint } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Cache } from "@choreo/kit/informer";
import type { Runnable } from "@choreo/kit/lifecycle";
import { sleep } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import { objectRef, type EventRecorder } from "@choreo/kit/events";
import { tolerates } from "@choreo/kit";

export const NODE_LEASE_NAMESPACE = "kube-node-lease";
export const UNREACHABLE_TAINT = "node.kubernetes.io/unreachable";

/** Index name: pods by the node they are bound to (spec.nodeName). */
export const BY_NODE = "node";
/** Indexer for {@link BY_NODE}. */
export const nodeNameOf = (p: Pod): string[] => (p.spec?.nodeName ? [p.spec.nodeName] : []);

export interface NodeLifecycleOptions {
  /** The api writes: node taint and status (typed "node"), pod deletes. */
  client: Pick<ApiClient, "typed" | "delete">;
  nodes: Cache<Node>;
  leases: Cache<Lease>;
  /** Pods with the {@link BY_NODE} index. */
  pods: Cache<Pod>;
  events?: Pick<EventRecorder, "emit">;
  log: Logger;
  graceMs?: number;
  evictionMs?: number;
  /** Nodes evicted per second at most. */
  evictionRate?: number;
  now?: () => number;
}

const hasTaint = (n: Node | undefined) => !!n?.spec?.taints.some((t) => t.key === UNREACHABLE_TAINT && t.effect === "NoExecute");

/** The condition an evicted pod carries (Kubernetes' taint manager, word for word). */
const TAINT_CONDITION = {
  type: DISRUPTION_TARGET,
  status: "True",
  reason: "DeletionByTaintManager",
  message: "Taint manager: deleting due to NoExecute taint",
};

/** The pods to evict from an unreachable node: those not tolerating the taint (pure). */
export function podsToEvict(pods: readonly Pod[], taint: Taint): Pod[] {
  return pods.filter(
    (p) => !p.metadata?.deletionTimestamp && !(p.spec?.tolerations ?? []).some((t) => tolerates(t, taint) && t.tolerationSeconds === undefined),
  );
}

/**
 * Whether `silent` of `total` nodes falling silent at once is a disruption —
 * the control plane or the network cut off, not the nodes failing — in which
 * no node is marked or evicted (Kubernetes' zone states, pure): every node
 * silent (full disruption), or more than 2 and at least 55% of them in a
 * cluster of at most 50 nodes (partial disruption, where Kubernetes' eviction
 * rate for small clusters is 0).
 */
export function disrupted(total: number, silent: number): boolean {
  if (total === 0 || silent === 0) return false;
  return silent === total || (total <= 50 && silent > 2 && silent / total >= 0.55);
}

/** A node's status with Ready=Unknown (pure). */
export function markUnknown(node: Node, now: string): Node {
  const next = structuredClone(node);
  const status = next.status!;
  const prev = status.conditions.find((c) => c.type === "Ready");
  const unknown: NodeCondition = {
    type: "Ready",
    status: "Unknown",
    lastHeartbeatTime: prev?.lastHeartbeatTime ?? "",
    lastTransitionTime: prev?.status === "Unknown" ? prev.lastTransitionTime : now,
    reason: "NodeStatusUnknown",
    message: "Kubelet stopped posting node status.",
  };
  status.conditions = [unknown, ...status.conditions.filter((c) => c.type !== "Ready")];
  return next;
}

export class NodeLifecycle implements Runnable {
  readonly name = "node-lifecycle";
  /** One per term of leadership (a Controller runs once). */
  private controller: Controller | undefined;
  /** node → the renewTime last seen and when (this clock) it was seen. */
  private readonly observed = new Map<string, { renewTime: string; at: number }>();
  /** node → when this actor tainted it. */
  private readonly tainted = new Map<string, number>();
  /** Whether the last check found a disruption (see {@link disrupted}). */
  private disruption = false;
  private tokens: number;
  private lastRefill: number;
  readonly stats = { markedUnknown: 0, evictedPods: 0, cleared: 0 };

  constructor(private readonly opts: NodeLifecycleOptions) {
    this.tokens = this.rate;
    this.lastRefill = this.now();
    const seen = (l: { metadata?: { name: string }; spec?: { renewTime?: string } }) => {
      const name = l.metadata?.name ?? "";
      const renewTime = l.spec?.renewTime ?? "";
      if (this.observed.get(name)?.renewTime !== renewTime) this.observed.set(name, { renewTime, at: this.now() });
      this.controller?.enqueue(name);
    };
    opts.leases.addEventHandler({ onAdd: seen, onUpdate: (_o, l) => seen(l) });
    opts.nodes.addEventHandler({
      onAdd: (n) => this.controller?.enqueue(n.metadata?.name ?? ""),
      onUpdate: (_o, n) => this.controller?.enqueue(n.metadata?.name ?? ""),
      onDelete: (n) => {
        this.observed.delete(n.metadata?.name ?? "");
        this.tainted.delete(n.metadata?.name ?? "");
      },
    });
  }

  private get rate(): number {
    return this.opts.evictionRate ?? 10;
  }

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  /** Runs the monitor until `signal` aborts; may be called again (a new term of leadership). */
  async start(signal: AbortSignal): Promise<void> {
    await Promise.all([this.opts.nodes.waitForSync(signal), this.opts.leases.waitForSync(signal), this.opts.pods.waitForSync(signal)]);
    // A term of leadership starts with every node given a fresh grace period, as Kubernetes' controller starts
    // each node's probe time when it first sees it: what an earlier term saw is not judged by this one. A term
    // won back once the api answers again follows an outage in which no node could renew, and its leases come
    // back one by one — the last ones are no failed nodes (a chaos run's Redis failover marked one so).
    const at = this.now();
    for (const n of this.opts.nodes.keys())
      this.observed.set(n, { renewTime: this.opts.leases.get(`${NODE_LEASE_NAMESPACE}/${n}`)?.spec?.renewTime ?? "", at });
    const controller = new Controller({ name: "node-lifecycle", reconcile: (key, s) => this.reconcile(key, s), workers: 4, log: this.opts.log });
    this.controller = controller;
    for (const key of this.opts.nodes.keys()) controller.enqueue(key);
    try {
      await controller.start(signal);
    } finally {
      if (this.controller === controller) this.controller = undefined;
    }
  }

  async reconcile(name: string, signal: AbortSignal): Promise<Result> {
    const node = this.opts.nodes.get(name);
    if (!node) return done();
    const graceMs = this.opts.graceMs ?? 8_000;
    const evictionMs = this.opts.evictionMs ?? 5_000;
    // A node without a Lease yet is timed from when this actor first saw it.
    if (!this.observed.has(name)) this.observed.set(name, { renewTime: "", at: this.now() });
    const silentFor = this.now() - this.observed.get(name)!.at;
    if (silentFor < graceMs) {
      if (hasTaint(node)) await this.clear(name);
      return requeueAfter(graceMs - silentFor + 100);
    }
    if (this.inDisruption(graceMs)) return requeueAfter(1_000);
    const ready = node.status?.conditions.find((c) => c.type === "Ready")?.status;
    if (ready !== "Unknown" || !hasTaint(node)) await this.markUnreachable(name);
    const since = this.tainted.get(name) ?? this.now();
    this.tainted.set(name, since);
    const wait = since + evictionMs - this.now();
    if (wait > 0) return requeueAfter(wait + 100);
    // Checked again: the others may have fallen silent since this node was marked.
    if (this.inDisruption(graceMs)) return requeueAfter(1_000);
    await this.evict(name, signal);
    return requeueAfter(Math.max(1_000, evictionMs));
  }

  /**
   * Whether the silent nodes now make a disruption (logged when that
   * changes). A node counts as silent here once it missed half its grace
   * period: in a control-plane outage the nodes fall silent one renewal
   * period apart, and counting only those past the whole grace found the
   * first ones alone — 2 of 3 hollow nodes taken for failed while Redis was
   * stopped (npm run chaos). A healthy node renews every quarter of it.
   */
  private inDisruption(graceMs: number): boolean {
    const names = this.opts.nodes.keys();
    const silent = names.filter((n) => this.now() - (this.observed.get(n)?.at ?? this.now()) >= graceMs / 2).length;
    const now = disrupted(names.length, silent);
    if (now !== this.disruption) {
      this.disruption = now;
      if (now)
        this.opts.log.warn(
          { silent, nodes: names.length },
          "most nodes silent at once: a control-plane or network outage, not node failures; no node marked or evicted",
        );
      else {
        this.opts.log.info({ silent, nodes: names.length }, "disruption over: node failures handled again");
        // Every node gets a fresh grace period (Kubernetes' handleDisruption resets each probeTimestamp on leaving a
        // disruption): the nodes' renewals come back one by one, and the last ones are no failed nodes.
        const at = this.now();
        for (const n of names) this.observed.set(n, { renewTime: this.observed.get(n)?.renewTime ?? "", at });
        return true;
      }
    }
    return now;
  }

  private async markUnreachable(name: string): Promise<void> {
    const nodes = this.opts.client.typed("node");
    await retryOnConflict(async () => {
      let node = await nodes.get("", name);
      if (!hasTaint(node)) {
        const next = structuredClone(node);
        next.spec!.taints = [...next.spec!.taints, { key: UNREACHABLE_TAINT, value: "", effect: "NoExecute", timeAdded: nowRfc3339() }];
        node = await nodes.update(next);
      }
      if (node.status?.conditions.find((c) => c.type === "Ready")?.status !== "Unknown") await nodes.updateStatus(markUnknown(node, nowRfc3339()));
    });
    this.stats.markedUnknown++;
    this.opts.log.info({ node: name }, "node unreachable: Ready=Unknown, tainted");
    this.opts.events?.emit(
      { kind: "Node", apiVersion: "v1", namespace: "", name, uid: this.opts.nodes.get(name)?.metadata?.uid ?? "", resourceVersion: "", fieldPath: "" },
      "Normal",
      "NodeNotReady",
      `Node ${name} status is now: NodeNotReady`,
    );
  }

  private async clear(name: string): Promise<void> {
    const nodes = this.opts.client.typed("node");
    await retryOnConflict(async () => {
      const node = await nodes.get("", name);
      if (!hasTaint(node)) return;
      const next = structuredClone(node);
      next.spec!.taints = next.spec!.taints.filter((t) => t.key !== UNREACHABLE_TAINT);
      await nodes.update(next);
    });
    this.tainted.delete(name);
    this.stats.cleared++;
    this.opts.log.info({ node: name }, "node reachable again: taint removed");
  }

  /**
   * Marks the pod DisruptionTarget (DeletionByTaintManager) on its latest
   * version before its deletion, as Kubernetes' taint manager; false when the
   * name now holds another pod (the one meant is gone).
   */
  private async markPod(p: Pod): Promise<boolean> {
    const pods = this.opts.client.typed("pod");
    const { namespace, name, uid } = p.metadata!;
    return retryOnConflict(async () => {
      const cur = await pods.get(namespace, name);
      if (cur.metadata?.uid !== uid) return false;
      const status = withPodCondition(cur.status, TAINT_CONDITION, nowRfc3339());
      if (status) await pods.updateStatus({ ...cur, status });
      return true;
    });
  }

  private async evict(name: string, signal: AbortSignal): Promise<void> {
    const taint: Taint = { key: UNREACHABLE_TAINT, value: "", effect: "NoExecute", timeAdded: "" };
    const victims = podsToEvict(this.opts.pods.byIndex(BY_NODE, name), taint);
    if (victims.length === 0) return;
    await this.takeToken(signal);
    for (const p of victims) {
      try {
        if (!(await this.markPod(p))) continue;
        await this.opts.client.delete("pods", p.metadata!.namespace, p.metadata!.name, { gracePeriodSeconds: 0 });
        this.stats.evictedPods++;
        this.opts.events?.emit(
          objectRef("Pod", "v1", p),
          "Normal",
          "TaintManagerEviction",
          `Marking for deletion Pod ${keyOf(p.metadata!)}: node ${name} is unreachable`,
        );
        this.opts.log.info({ node: name, pod: keyOf(p.metadata!) }, "pod evicted");
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
  }

  /** A token bucket of `rate` nodes per second (burst `rate`). */
  private async takeToken(signal: AbortSignal): Promise<void> {
    for (;;) {
      const now = this.now();
      this.tokens = Math.min(this.rate, this.tokens + ((now - this.lastRefill) / 1000) * this.rate);
      this.lastRefill = now;
      if (this.tokens >= 1) {
        this.tokens--;
        return;
      }
      await sleep(Math.ceil(((1 - this.tokens) / this.rate) * 1000), signal);
      if (signal.aborted) throw new Error("aborted");
    }
  }
}
