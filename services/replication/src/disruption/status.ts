// The disruption controller's pure half, after Kubernetes'
// pkg/controller/disruption: a PodDisruptionBudget's status from the pods
// its selector matches, their controllers' scale and the clock.
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { IntOrString } from "@choreo/kit/gen/choreo/core/v1/core";
import type { OwnerReference } from "@choreo/kit/gen/choreo/meta/v1/meta";
import { PodDisruptionBudgetStatus, type PodDisruptionBudget, type PodDisruptionBudgetCondition } from "@choreo/kit/gen/choreo/policy/v1/policy";
import { controllerOf, isReady } from "../pod-template.js";

/** How long an evicted pod may take to be marked deleted before the budget counts it again (Kubernetes' DeletionTimeout). */
export const DELETION_TIMEOUT_MS = 2 * 60_000;

/**
 * The scale of a pod's controller: the uid of the object that decides it
 * (a ReplicaSet's Deployment) and its replicas; undefined when the controller
 * has no scale or is not known.
 */
export type ScaleOf = (namespace: string, ref: OwnerReference) => { uid: string; replicas: number } | undefined;

/** Why a budget's status could not be computed (the SyncFailed condition). */
export class SyncError extends Error {
  override name = "SyncError";
}

/** What one computation gives beside the status. */
export interface Computed {
  status: PodDisruptionBudgetStatus;
  /** Epoch ms at which an entry of disruptedPods times out: compute again then. */
  recheckAt?: number | undefined;
  /** Pods without a controller, under a budget that needs their scale (the UnmanagedPods event). */
  unmanaged: string[];
  /** Evicted pods still there after DELETION_TIMEOUT_MS (the NotDeleted event). */
  notDeleted: Pod[];
}

/** Kubernetes' GetScaledValueFromIntOrPercent: an int, or a percentage of `total` (rounded up or down). */
export function scaled(v: IntOrString | undefined, total: number, roundUp: boolean): number {
  const val = v?.value;
  if (!val) return 0;
  if (val.$case === "intVal") return val.value;
  const m = /^([0-9]+)%$/.exec(val.value);
  if (!m) throw new SyncError(`invalid value for IntOrString: invalid value "${val.value}": must be an integer or a percentage`);
  const x = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(x) : Math.floor(x);
}

/** getExpectedScale: the summed scale of the pods' controllers; pods without one are listed apart. */
function expectedScale(pdb: PodDisruptionBudget, pods: readonly Pod[], scaleOf: ScaleOf): { expected: number; unmanaged: string[] } {
  const byController = new Map<string, number>();
  const unmanaged: string[] = [];
  for (const p of pods) {
    const ref = controllerOf(p.metadata);
    if (!ref) {
      unmanaged.push(p.metadata?.name ?? "");
      continue;
    }
    const scale = scaleOf(pdb.metadata?.namespace ?? "", ref);
    if (scale === undefined) throw new SyncError(`found no controllers for pod "${p.metadata?.name ?? ""}"`);
    byController.set(scale.uid, scale.replicas);
  }
  let expected = 0;
  for (const n of byController.values()) expected += n;
  return { expected, unmanaged };
}

/** getExpectedPodCount: the pods expected and the healthy ones the budget wants. */
export function expectedPodCount(pdb: PodDisruptionBudget, pods: readonly Pod[], scaleOf: ScaleOf): { expected: number; desired: number; unmanaged: string[] } {
  const spec = pdb.spec;
  if (spec?.maxUnavailable?.value) {
    const { expected, unmanaged } = expectedScale(pdb, pods, scaleOf);
    const maxUnavailable = scaled(spec.maxUnavailable, expected, true);
    return { expected, desired: Math.max(0, expected - maxUnavailable), unmanaged };
  }
  const min = spec?.minAvailable?.value;
  if (min?.$case === "intVal") return { expected: pods.length, desired: min.value, unmanaged: [] };
  if (min?.$case === "strVal") {
    const { expected, unmanaged } = expectedScale(pdb, pods, scaleOf);
    return { expected, desired: scaled(spec?.minAvailable, expected, true), unmanaged };
  }
  return { expected: 0, desired: 0, unmanaged: [] };
}

/** The DisruptionAllowed condition for `allowed` (Kubernetes' UpdateDisruptionAllowedCondition). */
export function disruptionAllowedCondition(
  old: readonly PodDisruptionBudgetCondition[],
  allowed: number,
  observedGeneration: number,
  now: string,
  failed = false,
): PodDisruptionBudgetCondition[] {
  const status = allowed > 0 && !failed ? "True" : "False";
  const reason = failed ? "SyncFailed" : allowed > 0 ? "SufficientPods" : "InsufficientPods";
  const prev = old.find((c) => c.type === "DisruptionAllowed");
  const cond: PodDisruptionBudgetCondition = {
    type: "DisruptionAllowed",
    status,
    observedGeneration,
    lastTransitionTime: prev && prev.status === status ? prev.lastTransitionTime : now,
    reason,
    message: prev && prev.status === status && prev.reason === reason ? prev.message : "",
  };
  return [...old.filter((c) => c.type !== "DisruptionAllowed"), cond];
}

/**
 * A budget's status (Kubernetes' trySync and updatePdbStatus): disruptedPods
 * pruned of pods gone, being deleted or past the timeout; currentHealthy the
 * Ready pods not being deleted and not just evicted; disruptionsAllowed
 * currentHealthy − desiredHealthy, never below 0 (0 when no pod is expected).
 * Throws a SyncError when a controller's scale is unknown.
 */
export function computeStatus(pdb: PodDisruptionBudget, pods: readonly Pod[], scaleOf: ScaleOf, nowMs: number): Computed {
  const now = new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, "Z");
  const { expected, desired, unmanaged } = expectedPodCount(pdb, pods, scaleOf);
  const recorded = pdb.status?.disruptedPods ?? {};
  const disruptedPods: Record<string, string> = {};
  const notDeleted: Pod[] = [];
  let recheckAt: number | undefined;
  for (const p of pods) {
    const name = p.metadata?.name ?? "";
    if (p.metadata?.deletionTimestamp) continue;
    const at = recorded[name];
    if (at === undefined) continue;
    const deadline = Date.parse(at) + DELETION_TIMEOUT_MS;
    if (!Number.isFinite(deadline) || deadline < nowMs) {
      notDeleted.push(p);
      continue;
    }
    disruptedPods[name] = at;
    recheckAt = recheckAt === undefined ? deadline : Math.min(recheckAt, deadline);
  }
  let healthy = 0;
  for (const p of pods) {
    if (p.metadata?.deletionTimestamp || (p.metadata?.name ?? "") in disruptedPods) continue;
    if (isReady(p)) healthy++;
  }
  const allowed = expected <= 0 ? 0 : Math.max(0, healthy - desired);
  const generation = pdb.metadata?.generation ?? 0;
  const status = PodDisruptionBudgetStatus.fromPartial({
    observedGeneration: generation,
    disruptedPods,
    disruptionsAllowed: allowed,
    currentHealthy: healthy,
    desiredHealthy: desired,
    expectedPods: expected,
    conditions: disruptionAllowedCondition(pdb.status?.conditions ?? [], allowed, generation, now),
  });
  return { status, recheckAt, unmanaged: pdb.spec?.minAvailable?.value?.$case === "intVal" ? [] : unmanaged, notDeleted };
}

/** The status after a failed computation (Kubernetes' failSafe): no disruption allowed, SyncFailed. */
export function failSafeStatus(pdb: PodDisruptionBudget, nowMs: number): PodDisruptionBudgetStatus {
  const now = new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, "Z");
  const status = PodDisruptionBudgetStatus.fromPartial({ ...structuredClone(pdb.status ?? {}), disruptionsAllowed: 0 });
  // The observed generation stays: evictions go on being refused until a computation succeeds.
  status.conditions = disruptionAllowedCondition(status.conditions, 0, status.observedGeneration, now, true);
  return status;
}
