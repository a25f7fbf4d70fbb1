import { PodStartLatency } from "./pod-start-latency.js";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Registry } from "prom-client";
import { keyOf, wrap } from "@choreo/kit";
import { podsOnNodeFilter } from "@choreo/kit/bus";
import type { ApiClient } from "@choreo/kit/client";
import { Controller } from "@choreo/kit/controller";
import { Informer, sharePod } from "@choreo/kit/informer";
import { runAll, sleep, type Runnable } from "@choreo/kit/lifecycle";
import type { EventRecorder } from "@choreo/kit/events";
import { FailureLog, type Logger } from "@choreo/kit/log";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";
import { refreshNodeStatus, registerNode, type NodeConfig } from "./node.js";
import { NodeLease } from "./node-lease.js";
import { periodic } from "./periodic.js";
import { podReconciler } from "./pod-reconciler.js";
import { PodStatusWriter } from "./pod-status-writer.js";
import { agentProber } from "./probes/agent-prober.js";
import type { Prober } from "./probes/prober.js";
import { KUBELET_BACKOFF, type RestartBackoff } from "./restart-policy.js";
import type { Runtime } from "./runtime/runtime.js";
import { withConfigSources } from "./config-sources/config-runtime.js";

/** What the agents' pod informers keep of each pod (kit informer sharePod): one for the process, so hollow nodes share its strings. */
const PODS = sharePod();

/** The constant message of a failed registration. */
const REGISTRATION_FAILED = "node registration failed; retrying";

/** How long after a refused (conflicting) status write its pod is reconciled again. */
const CONFLICT_RETRY_MS = 50;

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
  /**
   * An unchanged Ready heartbeat is re-posted after this long (default 5 min, the kubelet's
   * nodeStatusReportFrequency: the Lease is the heartbeat the node lifecycle reads; the status it writes is static).
   */
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
  /** How long a fresh pod's first status is held while only ContainerCreating (default `CHOREO_STATUS_HOLD_MS`, else 200 ms; 0: at once). */
  statusHoldMs?: number;
  /**
   * More of this node's machinery, run beside the pods for the agent's
   * life: the service proxy, the DNS responder, the log server. Built by
   * the caller, since they need the agent's informer and runtime.
   */
  extras?: (agent: NodeAgent) => Runnable[];
  /**
   * Stop every pod when the agent stops (`choreo down`: leave nothing
   * behind). By default pods keep running and a restarted agent adopts them.
   */
  stopPodsOnExit?: boolean;
  /** The longest a deleted pod waits to leave every Service's endpoints before it is stopped (pod-reconciler `deregistrationWait`; default `CHOREO_DEREGISTRATION_WAIT_MS`, else 15 s). */
  deregistrationWaitMs?: number;
  /** A real node's state dir, where pods' configMap/secret/downwardAPI/projected volumes are written (none: hollow, nothing to mount). */
  stateDir?: string;
  /** Pods waiting for a ConfigMap or Secret are retried, and mounted config files refreshed, this often (default 10 s). */
  configResyncMs?: number;
  /**
   * Where the agent's repeated failures are logged (kit/log FailureLog): registration, lease and status rounds,
   * list/watch, reconciles, status writes. The hollow nodes of a process share one, so that the api or the bus
   * away writes a few whole lines and a summary a window rather than a line with a stack per node per round.
   * Default: one of the agent's own.
   */
  failures?: FailureLog;
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
  /** The Node this agent registers. */
  readonly nodeName: string;
  readonly informer: Informer<"pod">;
  readonly controller: Controller;
  readonly lease: NodeLease;
  /** Probes of the pods' containers (undefined for runtimes without probes). */
  readonly prober: Prober | undefined;
  /** The Node as registered (after `start` got that far). */
  registered: Node | undefined;
  /**
   * Whether a ready Endpoints address names `ip`, as this node's service proxy sees the Endpoints: set by
   * the extra that runs the proxy. A deleted pod still named keeps running until it is not (pod-reconciler
   * `deregistrationWait`). Undefined (no proxy: hollow nodes): deleted pods stop at once.
   */
  endpointsListing: ((ip: string) => boolean) | undefined;
  private readonly log: Logger;
  private readonly failures: FailureLog;
  private readonly opts: NodeAgentOptions;
  /**
   * This agent's status writes by revision, as the api answered them, until the informer hears of that revision:
   * the live message is then taken as the write (kit/bus followEvents `known`) — neither verified nor decoded.
   * A node's own status write coming back is one of a hollow pod's two events, and verifying it (Ed25519) was
   * the largest cost of a pod. Writes of pods being deleted are left out (such a write may delete the pod).
   */
  private readonly ownWrites = new Map<number, Pod>();
  /**
   * Own writes handed to the informer (above) and not yet seen in its update callback. Such an update changes
   * only the status, to what this agent computed and wrote: it is not reconciled again (the kubelet's pod config
   * does not sync a pod for a status-only update either); the status writer is told its write arrived. Changes
   * to the runtime meanwhile are queued by `runtime.onChange`, newer statuses by the writer itself.
   */
  private readonly ownPods = new WeakSet<Pod>();
  /** The pods' status writer (pod-reconciler). */
  readonly statuses: PodStatusWriter;

  constructor(options: NodeAgentOptions) {
    // Callbacks of this agent are bound methods, not arrow functions in properties: under tsx (esbuild keepNames) each of
    // those gets a `name` property array of its own (~260 B), and a process holds thousands of hollow agents.
    const node = options.node.name;
    this.name = `node-agent-${node}`;
    this.nodeName = node;
    this.log = options.log.child({ node });
    const failures = (this.failures = options.failures ?? new FailureLog(options.log));
    this.informer = new Informer({
      failures,
      client: options.client,
      nc: options.nc,
      jsm: options.jsm,
      kind: "pod",
      log: this.log,
      filterSubject: podsOnNodeFilter(node),
      live: true,
      fieldSelector: `spec.nodeName=${node}`,
      known: this.ownWrite.bind(this),
      // The agent runs pods and reads all of them but managedFields (a kubectl-applied pod's are ~8 KB of its ~23
      // KB cached, with the read chunk their bytes are a view of): the api keeps the stored ones on a write without.
      // sharePod drops those and shares empty lists and repeated strings: ~5.4 → ~3.3 KB for a bench:scale pod,
      // ~22.7 → ~10.2 KB for a kubectl-applied one (bench/informer-memory.ts). One per process: hollow nodes share it.
      transform: PODS,
    });
    // ConfigMaps, Secrets and the downward API delivered around whichever runtime (config-sources/).
    const runtime = withConfigSources(options.runtime, {
      client: options.client,
      pods: this.informer,
      stateDir: options.stateDir,
      allocatable: options.node,
      events: options.events,
      log: this.log,
      resyncMs: options.configResyncMs,
      nc: options.nc,
    });
    const opts = (this.opts = { ...options, runtime });
    this.statuses = new PodStatusWriter({
      failures,
      client: opts.client,
      log: this.log,
      holdMs: opts.statusHoldMs,
      onWritten: this.wroteStatus.bind(this),
      // Reconciled again on the informer's newer copy, a moment later (it may still be on its way).
      onConflict: (pod) => this.controller.enqueueAfter(keyOf(pod.metadata ?? { namespace: "", name: "" }), CONFLICT_RETRY_MS),
    });
    this.prober = agentProber({ runtime: opts.runtime, pods: this.informer, enqueue: (k) => this.controller.enqueue(k), events: opts.events, log: this.log });
    this.controller = new Controller({
      failures,
      name: "node-agent-pods",
      workers: opts.workers ?? 4,
      log: this.log,
      registry: opts.registry,
      reconcile: podReconciler({
        node,
        hostIp: opts.node.internalIp,
        client: opts.client,
        runtime: opts.runtime,
        pods: this.informer,
        backoff: opts.restartBackoff ?? KUBELET_BACKOFF,
        log: this.log,
        events: opts.events,
        prober: this.prober,
        statuses: this.statuses,
        startLatency: opts.registry && new PodStartLatency(opts.registry),
        listedInEndpoints: this.listedInEndpoints.bind(this),
        deregistrationWaitMs: opts.deregistrationWaitMs,
      }),
    });
    const enqueue = this.enqueuePod.bind(this);
    this.informer.addEventHandler({ onAdd: enqueue, onUpdate: this.podUpdated.bind(this), onDelete: enqueue });
    opts.runtime.onChange((p) => this.controller.enqueue(keyOf(p)));
    // Each renewal gives up within the renewal period and the next one follows (a request lost with a dying api
    // replica waited the client's 10 s, past the lifecycle's 8 s grace: the node was taken for failed).
    this.lease = new NodeLease(opts.client.withTimeout(Math.max(1_000, opts.leaseRenewMs ?? 2_000)), node, opts.leaseDurationSeconds ?? 10);
  }

  private enqueuePod(p: Pod): void {
    this.controller.enqueue(keyOf(p.metadata ?? { namespace: "", name: "" }));
  }

  /** An informer update: queued, unless it is this agent's own status write coming back (see `ownPods`). */
  private podUpdated(_old: Pod, pod: Pod): void {
    if (!this.ownPods.has(pod)) return this.enqueuePod(pod);
    this.ownPods.delete(pod);
    this.statuses.caughtUp(pod);
  }

  /** Whether this node's service proxy sees `ip` in an Endpoints (`endpointsListing`; none: false). */
  private listedInEndpoints(ip: string): boolean {
    return this.endpointsListing?.(ip) ?? false;
  }

  /** Remembers a status write as the api answered it, unless the informer is already past its revision. */
  private wroteStatus(pod: Pod): void {
    const revision = Number(pod.metadata?.resourceVersion);
    for (const r of this.ownWrites.keys()) if (r <= this.informer.revision) this.ownWrites.delete(r);
    if (!Number.isSafeInteger(revision) || revision <= this.informer.revision || pod.metadata?.deletionTimestamp) return;
    // As the informer's transform keeps it (in place: only the status writer holds it too, and reads it); the
    // transform then hands on this same object (`ownPods` knows it by identity).
    this.ownWrites.set(revision, PODS(pod, true));
  }

  /** The change at `revision` when it is one of this agent's status writes (once). */
  private ownWrite(revision: number): WatchEvent | undefined {
    const pod = this.ownWrites.get(revision);
    if (!pod) return undefined;
    this.ownWrites.delete(revision);
    this.ownPods.add(pod);
    return { type: "MODIFIED", object: wrap("pod", pod), status: undefined, revision, prevLabels: {}, prevFields: {}, hasPrev: false };
  }

  get runtime(): Runtime {
    return this.opts.runtime;
  }

  async start(signal: AbortSignal): Promise<void> {
    const o = this.opts;
    // The runtime finds what it ran before a restart (so pods are adopted, not restarted).
    for (let attempt = 0; ; attempt++) {
      try {
        await o.runtime.init();
        break;
      } catch (err) {
        this.log.error({ err, runtime: o.runtime.name }, "runtime initialisation failed; retrying");
        if (!(await sleep(Math.min(10_000, 500 * 2 ** attempt), signal))) return;
      }
    }
    for (let attempt = 0; !this.registered; attempt++) {
      try {
        this.registered = await registerNode(o.client, o.node);
        this.failures.recovered(REGISTRATION_FAILED, this.nodeName, {}, this.log);
        this.log.info({ podCidr: o.node.podCidr }, "node registered");
      } catch (err) {
        this.failures.failed(REGISTRATION_FAILED, this.nodeName, err, {}, this.log);
        if (!(await sleep(Math.min(5_000, 200 * 2 ** attempt), signal))) return;
      }
    }
    const resyncMs = o.resyncMs ?? 300_000;
    try {
      await runAll(
        [
          this.informer,
          this.controller,
          periodic("lease", o.leaseRenewMs ?? 2_000, () => this.lease.renew(), this.log, { failures: this.failures, subject: this.nodeName }),
          periodic("node-status", o.statusCheckMs ?? 10_000, () => refreshNodeStatus(o.client, o.node, o.statusReportMs ?? 300_000), this.log, {
            jitterFirst: true,
            failures: this.failures,
            subject: this.nodeName,
          }),
          // At once (pods the api deleted while the agent was away are stopped), then every 2.5–5 min at random: 5,000
          // hollow nodes started together each queued all their pods in the same 100 ms, 300 s in (bench:scale's
          // 150,000 pods: 124,000 reconciles at once, ~10 s of nothing else in the process).
          periodic("resync", resyncMs, (s) => this.resync(s), this.log, { spread: 0.5, failures: this.failures, subject: this.nodeName }),
          ...(o.extras?.(this) ?? []),
        ],
        signal,
      );
    } finally {
      this.prober?.close();
      if (o.stopPodsOnExit) {
        const held = o.runtime.listPods();
        await Promise.all(
          held.map((p) => o.runtime.stopPod(p, 5).catch((err: unknown) => this.log.warn({ err, pod: keyOf(p) }, "stopping a pod on exit failed"))),
        );
        this.log.info({ pods: held.length }, "pods stopped on exit");
      }
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
