// A Deployment's status and conditions (pure): Kubernetes' calculateStatus,
// the Available and Progressing conditions, progress deadlines.
import type { Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import { actualReplicas, availableReplicas, maxUnavailable, readyReplicas, replicasOf, specReplicas } from "./util.js";

export const AVAILABLE = "Available";
export const PROGRESSING = "Progressing";
export const REPLICA_FAILURE = "ReplicaFailure";

/** Reasons of the Progressing and Available conditions, as Kubernetes names them. */
export const Reason = {
  NewReplicaSetCreated: "NewReplicaSetCreated",
  FoundNewReplicaSet: "FoundNewReplicaSet",
  ReplicaSetUpdated: "ReplicaSetUpdated",
  NewReplicaSetAvailable: "NewReplicaSetAvailable",
  ProgressDeadlineExceeded: "ProgressDeadlineExceeded",
  DeploymentPaused: "DeploymentPaused",
  DeploymentResumed: "DeploymentResumed",
  MinimumReplicasAvailable: "MinimumReplicasAvailable",
  MinimumReplicasUnavailable: "MinimumReplicasUnavailable",
} as const;

/** RFC 3339 to the second, as Kubernetes' metav1.Time writes it. */
export const rfc3339 = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");

/** A condition stamped now. */
export function condition(type: string, status: string, reason: string, message: string, nowMs: number): DeploymentCondition {
  const t = rfc3339(nowMs);
  return { type, status, reason, message, lastUpdateTime: t, lastTransitionTime: t };
}

export const getCondition = (s: DeploymentStatus | undefined, type: string): DeploymentCondition | undefined => s?.conditions.find((c) => c.type === type);

/** Kubernetes' SetDeploymentCondition: same status and reason changes nothing; same status keeps the transition time. */
export function setCondition(s: DeploymentStatus, c: DeploymentCondition): void {
  const cur = getCondition(s, c.type);
  if (cur && cur.status === c.status && cur.reason === c.reason) return;
  const next = cur && cur.status === c.status ? { ...c, lastTransitionTime: cur.lastTransitionTime } : c;
  s.conditions = [...s.conditions.filter((x) => x.type !== c.type), next];
}

export function removeCondition(s: DeploymentStatus, type: string): void {
  s.conditions = s.conditions.filter((x) => x.type !== type);
}

/** The progress deadline in seconds, if the Deployment has one (MaxInt32 means none). */
export function progressDeadline(d: Deployment): number | undefined {
  const s = d.spec?.progressDeadlineSeconds ?? 600;
  return s >= 2_147_483_647 ? undefined : s;
}

/** The status the ReplicaSets say (Kubernetes' calculateStatus), with the Available condition. */
export function calculateStatus(d: Deployment, all: readonly (ReplicaSet | undefined)[], newRS: ReplicaSet | undefined, nowMs: number): DeploymentStatus {
  const available = availableReplicas(all);
  const status: DeploymentStatus = {
    observedGeneration: d.metadata?.generation ?? 0,
    replicas: actualReplicas(all),
    updatedReplicas: actualReplicas([newRS]),
    readyReplicas: readyReplicas(all),
    availableReplicas: available,
    unavailableReplicas: Math.max(0, specReplicas(all) - available),
    conditions: [...(d.status?.conditions ?? [])],
    collisionCount: d.status?.collisionCount,
  };
  if (available >= replicasOf(d) - maxUnavailable(d))
    setCondition(status, condition(AVAILABLE, "True", Reason.MinimumReplicasAvailable, "Deployment has minimum availability.", nowMs));
  else setCondition(status, condition(AVAILABLE, "False", Reason.MinimumReplicasUnavailable, "Deployment does not have minimum availability.", nowMs));
  return status;
}

/** Every pod updated and available, and the status is of the current generation (DeploymentComplete). */
export function isComplete(d: Deployment, s: DeploymentStatus): boolean {
  const want = replicasOf(d);
  return s.updatedReplicas === want && s.replicas === want && s.availableReplicas === want && s.observedGeneration >= (d.metadata?.generation ?? 0);
}

/** Whether `s` shows progress over the Deployment's stored status (DeploymentProgressing). */
export function isProgressing(d: Deployment, s: DeploymentStatus): boolean {
  const old = d.status;
  const oldOld = (old?.replicas ?? 0) - (old?.updatedReplicas ?? 0);
  const newOld = s.replicas - s.updatedReplicas;
  return (
    s.updatedReplicas > (old?.updatedReplicas ?? 0) ||
    newOld < oldOld ||
    s.readyReplicas > (old?.readyReplicas ?? 0) ||
    s.availableReplicas > (old?.availableReplicas ?? 0)
  );
}

/** Whether the rollout has gone without progress past its deadline (DeploymentTimedOut). */
export function isTimedOut(d: Deployment, nowMs: number): boolean {
  const deadline = progressDeadline(d);
  const c = getCondition(d.status, PROGRESSING);
  if (deadline === undefined || !c || c.reason === Reason.NewReplicaSetAvailable) return false;
  if (c.reason === Reason.ProgressDeadlineExceeded) return true;
  const from = Date.parse(c.lastUpdateTime);
  return Number.isFinite(from) && from + deadline * 1000 < nowMs;
}

/**
 * The rollout's status (Kubernetes' syncRolloutStatus): calculateStatus,
 * then Progressing — NewReplicaSetAvailable when complete, ReplicaSetUpdated
 * while progressing (its update time refreshed), ProgressDeadlineExceeded
 * after the deadline — and the ReplicaSets' ReplicaFailure. Also when to
 * look again for a deadline (ms), if one is running.
 */
export function rolloutStatus(
  d: Deployment,
  all: readonly (ReplicaSet | undefined)[],
  newRS: ReplicaSet | undefined,
  nowMs: number,
): { status: DeploymentStatus; recheckInMs?: number } {
  const s = calculateStatus(d, all, newRS, nowMs);
  const deadline = progressDeadline(d);
  const cur = getCondition(d.status, PROGRESSING);
  const done = s.replicas === s.updatedReplicas && cur?.reason === Reason.NewReplicaSetAvailable;
  const subject = newRS ? `ReplicaSet "${newRS.metadata?.name ?? ""}"` : `Deployment "${d.metadata?.name ?? ""}"`;
  if (deadline !== undefined && !done) {
    if (isComplete(d, s)) {
      setCondition(s, condition(PROGRESSING, "True", Reason.NewReplicaSetAvailable, `${subject} has successfully progressed.`, nowMs));
    } else if (isProgressing(d, s)) {
      const c = condition(PROGRESSING, "True", Reason.ReplicaSetUpdated, `${subject} is progressing.`, nowMs);
      if (cur?.status === "True") c.lastTransitionTime = cur.lastTransitionTime;
      removeCondition(s, PROGRESSING);
      setCondition(s, c);
    } else if (isTimedOut(d, nowMs)) {
      setCondition(s, condition(PROGRESSING, "False", Reason.ProgressDeadlineExceeded, `${subject} has timed out progressing.`, nowMs));
    }
  }
  const failure = [newRS, ...all]
    .map((rs) => rs?.status?.conditions.find((c) => c.type === REPLICA_FAILURE))
    .find((c) => c !== undefined && c.status === "True");
  if (failure) {
    const c = condition(REPLICA_FAILURE, failure.status, failure.reason, failure.message, nowMs);
    c.lastTransitionTime = failure.lastTransitionTime || c.lastTransitionTime;
    setCondition(s, c);
  } else removeCondition(s, REPLICA_FAILURE);

  // requeueStuckDeployment: a rollout still in progress is looked at again when its deadline would pass.
  const now = getCondition(s, PROGRESSING);
  if (deadline === undefined || !now || isComplete(d, s) || now.reason === Reason.ProgressDeadlineExceeded || now.reason === Reason.NewReplicaSetAvailable)
    return { status: s };
  const at = Date.parse(now.lastUpdateTime) + deadline * 1000 - nowMs;
  return { status: s, recheckInMs: Math.max(1_000, (Number.isFinite(at) ? at : 0) + 1_000) };
}
