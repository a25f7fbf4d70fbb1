import { emptyMeta, isNotFound, keyOf } from "@choreo/kit";
import type { ApiClient } from "@choreo/kit/client";
import { done, requeueAfter, type Reconcile, type Result } from "@choreo/kit/controller";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { objectRef, type EventRecorder } from "@choreo/kit/events";
import type { Logger } from "@choreo/kit/log";
import { START_HOOKS, STOP_HOOKS, runHooks } from "./hooks/index.js";
import { buildPodStatus, isTerminal, reportsRunning } from "./pod-status.js";
import { PodStatusWriter } from "./pod-status-writer.js";
import { nowRfc3339Cached } from "./clock.js";
import { planRestarts, type RestartBackoff } from "./restart-policy.js";
import { advanceContainers } from "./init-runner.js";
import { notStarted } from "./init-containers.js";
import { startEphemeralContainers } from "./ephemeral-containers.js";
import { isHeldBack } from "./config-sources/config-runtime.js";
import type { Prober } from "./probes/prober.js";
import { heldPod, type PodRuntimeStatus, type Runtime, type RuntimePod } from "./runtime/runtime.js";
import type { PodStartLatency } from "./pod-start-latency.js";

/** What the pod reconciler works with. */
export interface PodReconcilerDeps {
  node: string;
  /** The node's InternalIP: every pod's hostIP. */
  hostIp: string;
  client: ApiClient;
  runtime: Runtime;
  /** The informer cache of the pods bound to this node. */
  pods: { get(key: string): Pod | undefined };
  backoff: RestartBackoff;
  log: Logger;
  /** Events like the kubelet's (Started, Killing, BackOff); none when undefined. */
  events?: Pick<EventRecorder, "emit"> | undefined;
  /** Liveness/readiness/startup probes (runtimes with `probes`); none when undefined. */
  prober?: Prober | undefined;
  /** How long a freshly started pod's first status is held while it only says ContainerCreating (default `CHOREO_STATUS_HOLD_MS`, else 200 ms; 0: at once). */
  statusHoldMs?: number | undefined;
  /** Pod start latency (kubelet_pod_start_duration_seconds, choreo_pod_startup_latency_seconds); none when undefined. */
  startLatency?: PodStartLatency | undefined;
  /**
   * Whether an Endpoints object (as this node's service proxy last saw it) still lists `ip` as a ready
   * address. A deleted pod is stopped only once no Service sends it traffic any more, or after
   * {@link deregistrationWaitMs}: see {@link deregistrationWait}. Undefined (hollow nodes): no wait.
   */
  listedInEndpoints?: ((ip: string) => boolean) | undefined;
  /** The longest a deleted pod waits to leave the Endpoints before it is stopped anyway (default `CHOREO_DEREGISTRATION_WAIT_MS`, else 15 s). */
  deregistrationWaitMs?: number | undefined;
  /** Each pod as the api answered one of this agent's status writes (PodStatusWriter `onWritten`). */
  onStatusWritten?: ((pod: Pod) => void) | undefined;
  /** The status writer to use (the agent's, which it tells when its own writes come back); else one of its own, with `statusHoldMs` and `onStatusWritten`. */
  statuses?: PodStatusWriter | undefined;
}

/** Default of {@link PodReconcilerDeps.deregistrationWaitMs}: a leader-elected endpoints actor's lease (15 s) — its standby takes over within it. */
export const DEFAULT_DEREGISTRATION_WAIT_MS = 15_000;

/** The deregistration wait from the env (`CHOREO_DEREGISTRATION_WAIT_MS`; 0 turns it off), else the default. */
export function deregistrationWaitMsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env["CHOREO_DEREGISTRATION_WAIT_MS"]);
  return env["CHOREO_DEREGISTRATION_WAIT_MS"] !== undefined && Number.isFinite(v) && v >= 0 ? v : DEFAULT_DEREGISTRATION_WAIT_MS;
}

/** After a deleted pod leaves the Endpoints, how long it keeps running while every node's proxy rewrites its rules (a 50 ms debounce and an iptables-restore). */
export const PROXY_PROPAGATION_MS = 1_000;

/**
 * How much longer a terminating pod should keep running before its containers get SIGTERM, in ms (0: stop now).
 *
 * Kubernetes sends SIGTERM as soon as the kubelet sees the deletion, while the endpoints controller and every
 * node's kube-proxy are still taking the pod out of the Services: requests keep arriving at a pod that is
 * shutting down, and users add a `preStop: sleep 5` to every Deployment to cover the race. When the endpoints
 * controller is down (a restart, a failover), nothing takes the pod out at all until it is back. choreo's node
 * agent closes the race itself: a deleted pod whose IP a ready Endpoints address still names keeps running
 * until the Endpoints stop naming it and then {@link PROXY_PROPAGATION_MS} more, all within half its grace
 * period and at most `maxWaitMs`; the rest of the grace period is the containers'. A pod that no Service
 * selects, a force delete (grace 0) and a pod without an IP stop at once.
 */
export function deregistrationWait(o: {
  /** A ready Endpoints address names the pod now. */
  listed: boolean;
  /** How long ago it stopped being named, when it was named before (undefined: never seen named). */
  unlistedForMs: number | undefined;
  graceSeconds: number;
  maxWaitMs: number;
  /** Since the agent first saw the pod terminating. */
  waitedMs: number;
}): number {
  if (o.graceSeconds <= 0) return 0;
  const budget = Math.min(o.graceSeconds * 500, o.maxWaitMs) - o.waitedMs;
  if (budget <= 0) return 0;
  if (o.listed) return budget;
  if (o.unlistedForMs === undefined) return 0;
  return Math.max(0, Math.min(budget, PROXY_PROPAGATION_MS - o.unlistedForMs));
}

/**
 * Makes the runtime match one pod bound to this node (the kubelet's
 * syncPod): start it through the lifecycle hooks (or adopt it after an
 * agent restart), restart exited containers as its restartPolicy says,
 * stop it and confirm the deletion when it is being deleted, and report
 * its status when that changed.
 */
export function podReconciler(d: PodReconcilerDeps): Reconcile {
  const stop = async (pod: Pod, gracePeriodSeconds: number): Promise<void> => {
    d.prober?.forget(pod.metadata?.uid ?? "");
    await runHooks(STOP_HOOKS, { pod, node: d.node, runtime: d.runtime, log: d.log, gracePeriodSeconds });
  };

  const statuses = d.statuses ?? new PodStatusWriter({ client: d.client, log: d.log, holdMs: d.statusHoldMs, onWritten: d.onStatusWritten });

  /** Pods this agent process started or offered for adoption (a runtime may hold others from before an agent restart). */
  const seen = new Set<string>();

  /** Terminating pods this agent still runs (uid →): when it first saw each, whether an Endpoints named it, since when not. */
  const terminating = new Map<string, { since: number; named: boolean; unnamedAt?: number }>();
  const maxWaitMs = d.deregistrationWaitMs ?? deregistrationWaitMsFromEnv();

  return async (key): Promise<Result> => {
    const pod = d.pods.get(key);
    const held = heldPod(d.runtime, key);
    if (!pod || pod.spec?.nodeName !== d.node) {
      // Gone from the api (or force-deleted): nothing may keep running.
      if (held) await stop(stubPod(held), 0);
      if (held) seen.delete(held.uid);
      if (held) statuses.forget(held.uid);
      if (held) d.startLatency?.forget(held.uid);
      if (held) terminating.delete(held.uid);
      return done();
    }
    const meta = pod.metadata!;
    if (held && held.uid !== meta.uid) await stop(stubPod(held), 0); // an older pod of the same name
    if (meta.deletionTimestamp) return terminate(pod);
    // It finished: its exited containers stay (their logs readable, as with the kubelet) until the pod is deleted.
    if (isTerminal(pod)) {
      d.prober?.forget(meta.uid);
      d.startLatency?.forget(meta.uid);
      statuses.forget(meta.uid);
      return done();
    }

    let rt = d.runtime.podStatus(meta.uid);
    // The first look since the agent started: a pod the runtime still holds (an initializing one too) is adopted with its spec.
    if (!seen.has(meta.uid) && (rt || reportsRunning(pod))) {
      const adopted = await d.runtime.adoptPod(pod);
      if (adopted) d.log.info({ pod: key }, "pod adopted");
      rt = adopted ?? rt;
    }
    seen.add(meta.uid);
    if (!rt) {
      d.startLatency?.starting(meta.uid);
      const ctx = await runHooks(START_HOOKS, { pod, node: d.node, runtime: d.runtime, log: d.log });
      rt = ctx.status ?? (d.runtime.podStatus(meta.uid) as PodRuntimeStatus);
      d.log.debug({ pod: key, podIp: rt.podIp }, "pod started");
      if (!isHeldBack(rt))
        for (const c of rt.containerStatuses.filter((cs) => !notStarted(cs))) d.events?.emit(podRef(pod), "Normal", "Started", `Started container ${c.name}`);
    }
    // Init containers one at a time, then the app containers (a no-op for a pod already running).
    // A pod held back for a missing ConfigMap or Secret (config-sources/) has nothing to advance yet.
    const init = isHeldBack(rt) ? { rt, backingOff: new Set<string>(), recheckMs: undefined } : await advanceContainers(d, pod, rt);
    rt = init.rt;
    // Ephemeral containers (kubectl debug): each new one started once, never restarted.
    if (!isHeldBack(rt)) rt = await startEphemeralContainers(d, pod, rt);

    const policy = pod.spec?.restartPolicy || "Always";
    let plan = planRestarts(policy, rt.containerStatuses, Date.now(), d.backoff);
    if (plan.restartNow.length > 0) {
      for (const c of plan.restartNow) await d.runtime.restartContainer(meta.uid, c);
      d.log.info({ pod: key, containers: plan.restartNow }, "containers restarted");
      for (const c of plan.restartNow) d.events?.emit(podRef(pod), "Normal", "Started", `Started container ${c}`);
      rt = d.runtime.podStatus(meta.uid) ?? rt;
      plan = planRestarts(policy, rt.containerStatuses, Date.now(), d.backoff);
    }

    for (const c of init.backingOff) plan.backingOff.add(c);
    if (init.recheckMs !== undefined) plan.recheckMs = Math.min(plan.recheckMs ?? Infinity, init.recheckMs);
    for (const c of plan.backingOff) d.events?.emit(podRef(pod), "Warning", "BackOff", `Back-off restarting failed container ${c} in pod ${meta.name}`);
    // The kubelet's Failed event for a container its runtime refuses to create as configured (a volume path the safe walk refused), once per new message.
    for (const cs of rt.containerStatuses) {
      const w = cs.state?.waiting;
      if (w?.reason !== "CreateContainerConfigError") continue;
      const before = pod.status?.containerStatuses.find((c) => c.name === cs.name)?.state?.waiting;
      if (before?.reason !== w.reason || before.message !== w.message) d.events?.emit(podRef(pod), "Warning", "Failed", `Error: ${w.message}`);
    }
    if (d.prober && d.runtime.probes) {
      d.prober.sync(pod, rt);
      rt = d.prober.apply(rt);
    }
    // Written by the per-pod writer: coalesced, the latest status only (a conflict is retried on the newer pod the informer delivers).
    const status = buildPodStatus(pod, rt, { hostIp: d.hostIp, now: nowRfc3339Cached(), backingOff: plan.backingOff });
    d.startLatency?.reported(pod, status);
    statuses.set(pod, status);
    return plan.recheckMs !== undefined ? requeueAfter(plan.recheckMs) : done();
  };

  /** Graceful deletion: stop within the grace period, then confirm the delete. */
  async function terminate(pod: Pod): Promise<Result> {
    const meta = pod.metadata!;
    const grace = meta.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
    const running = d.runtime.podStatus(meta.uid) !== undefined;
    const now = Date.now();
    let st = terminating.get(meta.uid);
    if (!st) terminating.set(meta.uid, (st = { since: now, named: false }));
    const waitedMs = now - st.since;
    if (running) {
      const ip = pod.status?.podIp;
      const listed = !!ip && grace > 0 && (d.listedInEndpoints?.(ip) ?? false);
      if (listed) {
        if (!st.named) d.log.info({ pod: keyOf(meta), ip }, "deleted pod still in a Service's endpoints; stopping it once it leaves them");
        st.named = true;
        delete st.unnamedAt;
      } else if (st.named) st.unnamedAt ??= now;
      const left = deregistrationWait({
        listed,
        unlistedForMs: st.unnamedAt === undefined ? undefined : now - st.unnamedAt,
        graceSeconds: grace,
        maxWaitMs,
        waitedMs,
      });
      if (left > 0) return requeueAfter(Math.min(left, 100));
      if (waitedMs > 0)
        d.log.info({ pod: keyOf(meta), waitedMs }, "deleted pod out of every Service's endpoints (or waited its share of the grace period); stopping it");
      for (const c of pod.spec?.containers ?? []) d.events?.emit(podRef(pod), "Normal", "Killing", `Stopping container ${c.name}`);
    }
    await stop(pod, Math.max(running && grace > 0 ? 1 : 0, grace - Math.floor(waitedMs / 1000)));
    terminating.delete(meta.uid);
    seen.delete(meta.uid);
    statuses.forget(meta.uid);
    d.startLatency?.forget(meta.uid);
    try {
      await d.client.delete("pods", meta.namespace, meta.name, { gracePeriodSeconds: 0, preconditions: { uid: meta.uid, resourceVersion: "" } });
      d.log.debug({ pod: keyOf(meta) }, "pod deletion confirmed");
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    return done();
  }
}

const podRef = (p: Pod) => objectRef("Pod", "v1", p);

/** A pod object carrying only the identity of a runtime pod (for the stop hooks). */
function stubPod(p: RuntimePod): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: emptyMeta({ name: p.name, namespace: p.namespace, uid: p.uid }),
    spec: undefined,
    status: undefined,
  };
}
