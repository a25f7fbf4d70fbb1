import { PodStatus, type ContainerStatus, type Pod, type PodCondition } from "@choreo/kit/gen/choreo/core/v1/core";
import type { PodRuntimeStatus } from "./runtime/runtime.js";
import { shouldRestart } from "./restart-policy.js";
import { incomplete, initialized, initStatusView, nextInitStep } from "./init-containers.js";
import { ephemeralStatusView } from "./ephemeral-containers.js";

/** Inputs of {@link buildPodStatus} besides the pod and its runtime status. */
export interface StatusInputs {
  hostIp: string;
  /** RFC 3339, for condition transitions. */
  now: string;
  /** Containers waiting out a restart back-off. */
  backingOff?: ReadonlySet<string>;
}

/**
 * The pod's phase from its containers and restart policy: Pending while its
 * init containers have not all completed (Failed when one failed under
 * restartPolicy Never), then from its app containers.
 */
export function podPhase(policy: string, statuses: readonly ContainerStatus[], inits: readonly ContainerStatus[] = []): string {
  if (!initialized(inits, statuses)) return nextInitStep(policy, inits, statuses).kind === "failed" ? "Failed" : "Pending";
  if (statuses.length === 0) return "Pending";
  const terminated = statuses.filter((c) => c.state?.terminated);
  const running = statuses.some((c) => c.state?.running);
  const restarting = (c: ContainerStatus): boolean =>
    c.state?.waiting?.reason === "CrashLoopBackOff" || (terminated.includes(c) && shouldRestart(policy, c.state?.terminated?.exitCode ?? 0));
  if (!running && statuses.some((c) => c.state?.waiting && !restarting(c))) return "Pending";
  if (terminated.length === statuses.length) {
    if (statuses.some(restarting)) return "Running";
    return terminated.some((c) => (c.state?.terminated?.exitCode ?? 0) !== 0) ? "Failed" : "Succeeded";
  }
  return "Running";
}

/** Shows containers in back-off as Kubernetes does: waiting CrashLoopBackOff, the exit as lastState. */
function withBackoff(pod: Pod, cs: ContainerStatus, backingOff: ReadonlySet<string> | undefined): ContainerStatus {
  if (!backingOff?.has(cs.name) || !cs.state?.terminated) return cs;
  return {
    ...cs,
    ready: false,
    started: false,
    state: { waiting: { reason: "CrashLoopBackOff", message: `back-off restarting failed container ${cs.name} in pod ${pod.metadata?.name ?? ""}` } },
    lastState: { terminated: cs.state.terminated },
  };
}

const OWN_CONDITIONS = ["Initialized", "Ready", "ContainersReady", "PodScheduled"];

/**
 * The status the agent reports for a pod (pure): phase, the four standard
 * conditions (transition times kept while a condition's status holds),
 * IPs, start time and container statuses. Fields owned by others
 * (qosClass, nominatedNodeName, other conditions) are carried over.
 */
export function buildPodStatus(pod: Pod, rt: PodRuntimeStatus, inputs: StatusInputs): PodStatus {
  const old = pod.status;
  const policy = pod.spec?.restartPolicy || "Always";
  const containerStatuses = rt.containerStatuses.map((cs) => withBackoff(pod, cs, inputs.backingOff));
  const initContainerStatuses = (rt.initContainerStatuses ?? []).map((cs) => initStatusView(withBackoff(pod, cs, inputs.backingOff)));
  const phase = podPhase(policy, containerStatuses, rt.initContainerStatuses);
  const notInitialized = initialized(rt.initContainerStatuses ?? [], rt.containerStatuses) ? [] : incomplete(rt.initContainerStatuses ?? []);
  const terminal = phase === "Succeeded" || phase === "Failed";
  const ready = phase === "Running" && containerStatuses.length > 0 && containerStatuses.every((c) => c.ready);
  const notReady = terminal ? "PodCompleted" : "ContainersNotReady";
  const cond = (type: string, ok: boolean, reason = "", message = ""): PodCondition => {
    const status = ok ? "True" : "False";
    const prev = old?.conditions.find((c) => c.type === type);
    const lastTransitionTime = prev && prev.status === status && prev.lastTransitionTime ? prev.lastTransitionTime : inputs.now;
    return { type, status, lastProbeTime: "", lastTransitionTime, reason: ok ? "" : reason, message: ok ? "" : message };
  };
  const conditions = [
    cond("Initialized", notInitialized.length === 0, "ContainersNotInitialized", `containers with incomplete status: [${notInitialized.join(" ")}]`),
    cond("Ready", ready, notReady),
    cond("ContainersReady", ready, notReady),
    cond("PodScheduled", true),
    ...(old?.conditions.filter((c) => !OWN_CONDITIONS.includes(c.type)) ?? []),
  ];
  return {
    phase,
    conditions,
    message: "",
    reason: "",
    nominatedNodeName: old?.nominatedNodeName ?? "",
    hostIp: inputs.hostIp,
    podIp: rt.podIp,
    podIps: rt.podIp ? [{ ip: rt.podIp }] : [],
    startTime: old?.startTime || rt.startedAt,
    initContainerStatuses,
    containerStatuses,
    qosClass: old?.qosClass ?? "",
    hostIps: inputs.hostIp ? [{ ip: inputs.hostIp }] : [],
    ephemeralContainerStatuses: (rt.ephemeralContainerStatuses ?? []).map(ephemeralStatusView),
    resize: "",
    resourceClaimStatuses: [],
  };
}

/**
 * Whether two statuses are the same (compared as their protobuf bytes). Equal
 * values encode to equal bytes, so a status the agent rebuilt unchanged (each
 * reconcile after the pod's own write comes back) is settled by a walk of the
 * two objects; only what the walk finds different is encoded to be sure.
 */
export function sameStatus(a: PodStatus | undefined, b: PodStatus | undefined): boolean {
  if (!a || !b) return a === b;
  if (plainEqual(a, b)) return true;
  return Buffer.from(PodStatus.encode(a).finish()).equals(PodStatus.encode(b).finish());
}

/** Deep equality of plain data (a missing key and an undefined value alike): true only when the values are the same. */
function plainEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!plainEqual(a[i], b[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  for (const k in x) if (!plainEqual(x[k], y[k])) return false;
  for (const k in y) if (!(k in x) && y[k] !== undefined) return false;
  return true;
}

/** Whether the pod's status says it is running (what an agent restart adopts). */
export function reportsRunning(pod: Pod): boolean {
  return pod.status?.phase === "Running" && Boolean(pod.status.podIp);
}

/** Whether the pod reached a phase it never leaves. */
export function isTerminal(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return phase === "Succeeded" || phase === "Failed";
}
