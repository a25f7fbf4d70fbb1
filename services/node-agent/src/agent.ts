import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Registry } from "prom-client";
import { keyOf } from "@choreo/kit";
import { podsOnNodeFilter } from "@choreo/kit/bus";
import type { ApiClient } from "@choreo/kit/client";
import { Controller } from "@choreo/kit/controller";
import { Informer } from "@choreo/kit/informer";
import { runAll, sleep, type Runnable } from "@choreo/kit/lifecycle";
import type { EventRecorder } from "@choreo/kit/events";
import type { Logger } from "@choreo/kit/log";
import type { Node } from "@choreo/kit/gen/choreo/core/v1/core";
import { refreshNodeStatus, registerNode, type NodeConfig } from "./node.js";
import { NodeLease } from "./node-lease.js";
import { periodic } from "./periodic.js";
import { podReconciler } from "./pod-reconciler.js";
import { KUBELET_BACKOFF, type RestartBackoff } from "./restart-policy.js";
import type { Runtime } from "./runtime/runtime.js";

/** Options of {@link NodeAgent}. */
export interface NodeAgentOptions {
  client: ApiClient;
  nc: NatsConnection;
  jsm: JetStreamManager;
  node: NodeConfig;
  runtime: Runtime;
  log: Logger;
  /** How often the Lease is renewed (default 2 s). */
  leaseRenewMs?: number;
  /** spec.leaseDurationSeconds of the Lease (default 10). */
  leaseDurationSeconds?: number;
  /** How often the node's status is checked (default 10 s). */
  statusCheckMs?: number;
  /** An unchanged Ready heartbeat is re-posted after this long (default 60 s). */
  statusReportMs?: number;
  /** Container restart back-off (default the kubelet's 10 s doubling to 5 min). */
  restartBackoff?: RestartBackoff;
  /** Concurrent pod reconciles (default 4). */
  workers?: number;
  /** Replays every pod, and looks for runtime pods the api forgot, this often (default 5 min). */
  resyncMs?: number;
  registry?: Registry;
  /** Where the kubelet's Events (Started, Killing, BackOff) go; none when undefined. */
  events?: Pick<EventRecorder, "emit">;
}

/**
 * One node's agent (the kubelet): registers the Node, renews its Lease,
 * and reconciles the pods bound to it — and only those: its informer reads
 * the event-log subjects of this node (invariant 5).
 *
 *   registerNode ─▶ runAll: lease renewals · node status · pod informer ─▶ pod reconciler ─▶ runtime
 */
export class NodeAgent implements Runnable {
  readonly name: string;
  readonly informer: Informer<"pod">;
  readonly controller: Controller;
  readonly lease: NodeLease;
  /** The Node as registered (after `start` got that far). */
  registered: Node | undefined;
  private readonly log: Logger;

  constructor(private readonly opts: NodeAgentOptions) {
    const node = opts.node.name;
    this.name = `node-agent-${node}`;
    this.log = opts.log.child({ node });
    this.informer = new Informer({
      client: opts.client, nc: opts.nc, jsm: opts.jsm, kind: "pod", log: this.log,
      filterSubject: podsOnNodeFilter(node), fieldSelector: `spec.nodeName=${node}`,
    });
    this.controller = new Controller({
      name: "node-agent-pods", workers: opts.workers ?? 4, log: this.log, registry: opts.registry,
      reconcile: podReconciler({
        node, hostIp: opts.node.internalIp, client: opts.client, runtime: opts.runtime, pods: this.informer,
        backoff: opts.restartBackoff ?? KUBELET_BACKOFF, log: this.log, events: opts.events,
      }),
    });
    const enqueue = (p: { metadata?: { namespace: string; name: string } }): void => this.controller.enqueue(keyOf(p.metadata ?? { namespace: "", name: "" }));
    this.informer.addEventHandler({ onAdd: enqueue, onUpdate: (_o, n) => enqueue(n), onDelete: enqueue });
    opts.runtime.onChange((p) => this.controller.enqueue(keyOf(p)));
    this.lease = new NodeLease(opts.client, node, opts.leaseDurationSeconds ?? 10);
  }

  get runtime(): Runtime {
    return this.opts.runtime;
  }

  async start(signal: AbortSignal): Promise<void> {
    const o = this.opts;
    for (let attempt = 0; !this.registered; attempt++) {
      try {
        this.registered = await registerNode(o.client, o.node);
        this.log.info({ podCidr: o.node.podCidr }, "node registered");
      } catch (err) {
        this.log.warn({ err }, "node registration failed; retrying");
        if (!(await sleep(Math.min(5_000, 200 * 2 ** attempt), signal))) return;
      }
    }
    const resyncMs = o.resyncMs ?? 300_000;
    try {
      await runAll(
        [
          this.informer,
          this.controller,
          periodic("lease", o.leaseRenewMs ?? 2_000, () => this.lease.renew(), this.log),
          periodic("node-status", o.statusCheckMs ?? 10_000, () => refreshNodeStatus(o.client, o.node, o.statusReportMs ?? 60_000), this.log, { jitterFirst: true }),
          periodic("resync", resyncMs, (s) => this.resync(s), this.log),
        ],
        signal,
      );
    } finally {
      await o.runtime.close();
    }
  }

  /**
   * Queues every pod of the cache and every pod the runtime holds: a pod
   * the api no longer has (deleted while we were away) gets stopped.
   */
  private async resync(signal: AbortSignal): Promise<void> {
    await this.informer.waitForSync(signal);
    for (const k of this.informer.keys()) this.controller.enqueue(k);
    for (const p of this.opts.runtime.listPods()) this.controller.enqueue(keyOf(p));
  }
}
