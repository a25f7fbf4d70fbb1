// A replicated set's status from its pods (pure): ReplicationController and
// ReplicaSet have the same status shape.
import type { Pod, PodTemplateSpec } from "@choreo/kit/gen/choreo/core/v1/core";
import type { ObjectMeta } from "@choreo/kit/gen/choreo/meta/v1/meta";
import { selectorFromSet } from "@choreo/kit/apimachinery";
import { isAvailable, isReady } from "../pod-template.js";

/** A condition of an RC or RS (ReplicaFailure). */
export interface SetCondition {
  type: string;
  status: string;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

/** The status of an RC or RS. */
export interface SetStatus {
  replicas: number;
  fullyLabeledReplicas: number;
  readyReplicas: number;
  availableReplicas: number;
  observedGeneration: number;
  conditions: SetCondition[];
}

/** What the status is computed from: an RC or RS. */
export interface Replicated {
  metadata?: ObjectMeta | undefined;
  spec?: { minReadySeconds: number; template?: PodTemplateSpec | undefined } | undefined;
  status?: SetStatus | undefined;
}

/** What the status says; `failure` is a create/delete error of the last sync (→ ReplicaFailure). */
export function computeStatus(
  rc: Replicated,
  active: readonly Pod[],
  nowMs: number,
  failure?: { reason: string; message: string },
  now = new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, "Z"),
): SetStatus {
  const templateLabels = selectorFromSet(rc.spec?.template?.metadata?.labels ?? {});
  const minReady = rc.spec?.minReadySeconds ?? 0;
  const counts = {
    replicas: active.length,
    fullyLabeledReplicas: active.filter((p) => templateLabels.matches(p.metadata?.labels)).length,
    readyReplicas: active.filter(isReady).length,
    availableReplicas: active.filter((p) => isAvailable(p, minReady, nowMs)).length,
  };
  return statusFromCounts(rc, counts, nowMs, failure, now);
}

/** The counts a status carries (of the set's active pods). */
export interface ReplicaCounts {
  replicas: number;
  fullyLabeledReplicas: number;
  readyReplicas: number;
  availableReplicas: number;
}

/** The status from counts already taken (the manager's tally); the conditions as {@link computeStatus}. */
export function statusFromCounts(
  rc: Replicated,
  counts: ReplicaCounts,
  nowMs: number,
  failure?: { reason: string; message: string },
  now = new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, "Z"),
): SetStatus {
  const prev = rc.status?.conditions ?? [];
  let conditions: SetCondition[] = prev.filter((c) => c.type !== "ReplicaFailure");
  if (failure) {
    const old = prev.find((c) => c.type === "ReplicaFailure");
    conditions = [
      ...conditions,
      { type: "ReplicaFailure", status: "True", reason: failure.reason, message: failure.message, lastTransitionTime: old?.lastTransitionTime || now },
    ];
  }
  return {
    replicas: counts.replicas,
    fullyLabeledReplicas: counts.fullyLabeledReplicas,
    readyReplicas: counts.readyReplicas,
    availableReplicas: counts.availableReplicas,
    observedGeneration: rc.metadata?.generation ?? 0,
    conditions,
  };
}

/** Whether two statuses say the same thing (so no write is needed). */
export function sameStatus(a: SetStatus | undefined, b: SetStatus): boolean {
  if (!a) return false;
  return (
    a.replicas === b.replicas &&
    a.fullyLabeledReplicas === b.fullyLabeledReplicas &&
    a.readyReplicas === b.readyReplicas &&
    a.availableReplicas === b.availableReplicas &&
    a.observedGeneration === b.observedGeneration &&
    JSON.stringify(a.conditions) === JSON.stringify(b.conditions)
  );
}

/** Milliseconds until the next pod becomes available by minReadySeconds (undefined: none pending). */
export function nextAvailableInMs(rc: Replicated, active: readonly Pod[], nowMs: number): number | undefined {
  const minReady = rc.spec?.minReadySeconds ?? 0;
  if (minReady <= 0) return undefined;
  let next: number | undefined;
  for (const p of active) {
    if (!isReady(p) || isAvailable(p, minReady, nowMs)) continue;
    const c = p.status?.conditions.find((x) => x.type === "Ready" && x.status === "True");
    const at = Date.parse(c?.lastTransitionTime ?? "") + minReady * 1000 - nowMs;
    if (Number.isFinite(at)) next = Math.min(next ?? Infinity, Math.max(at, 50));
  }
  return next;
}
