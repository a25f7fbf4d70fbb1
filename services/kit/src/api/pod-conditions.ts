// Pod conditions more than one writer sets beside the node agent: the
// DisruptionTarget condition Kubernetes (PodDisruptionConditions, 1.26+)
// puts on a pod before a disruption deletes it — the eviction API
// (EvictionByEvictionAPI), the scheduler's preemption (PreemptionByScheduler),
// the taint manager (DeletionByTaintManager).
import { PodStatus, type PodCondition } from "../gen/choreo/core/v1/core.js";

/** The condition type marking a pod about to be deleted by a disruption. */
export const DISRUPTION_TARGET = "DisruptionTarget";

/** What a writer of a condition gives: the times are the helper's. */
export type ConditionChange = Pick<PodCondition, "type" | "status" | "reason" | "message">;

/**
 * Sets a condition on a pod's status (Kubernetes' UpdatePodCondition):
 * appended when the type is new, else replaced, its lastTransitionTime kept
 * while the status holds and `now` when it changes. Returns whether the
 * status changed (nothing to write when it did not).
 */
export function setPodCondition(status: PodStatus, change: ConditionChange, now: string): boolean {
  const i = status.conditions.findIndex((c) => c.type === change.type);
  const old = status.conditions[i];
  if (!old) {
    status.conditions.push({ ...change, lastProbeTime: "", lastTransitionTime: now });
    return true;
  }
  const next: PodCondition = { ...old, ...change, lastTransitionTime: old.status === change.status ? old.lastTransitionTime : now };
  status.conditions[i] = next;
  return next.status !== old.status || next.reason !== old.reason || next.message !== old.message || next.lastTransitionTime !== old.lastTransitionTime;
}

/** The pod's status with the condition set, on a copy; undefined when it already carries it as given. */
export function withPodCondition(status: PodStatus | undefined, change: ConditionChange, now: string): PodStatus | undefined {
  const next = structuredClone(status) ?? PodStatus.fromPartial({});
  return setPodCondition(next, change, now) ? next : undefined;
}
