// The Deployment controller's vocabulary (pure): annotations and labels, the
// template hash, revisions, the rolling-update fenceposts, and ReplicaSet
// counting and ordering — Kubernetes' pkg/controller/deployment/util.
import { createHash } from "node:crypto";
import type { Deployment, ReplicaSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { PodTemplateSpec } from "@choreo/kit/gen/choreo/core/v1/core";
import { scaled } from "../ds/plan.js";
import { templateJson } from "../pod-template.js";

export const HASH_LABEL = "pod-template-hash";
export const REVISION = "deployment.kubernetes.io/revision";
export const REVISION_HISTORY = "deployment.kubernetes.io/revision-history";
export const DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas";
export const MAX_REPLICAS = "deployment.kubernetes.io/max-replicas";
export const CHANGE_CAUSE = "kubernetes.io/change-cause";
/** Longest revision-history annotation kept (Kubernetes' default MaxRevHistoryLengthInChars). */
export const MAX_REVISION_HISTORY_CHARS = 2000;

/** Deployment annotations never copied onto its ReplicaSets (Kubernetes' skipCopyAnnotation). */
const NOT_COPIED = new Set([
  "kubectl.kubernetes.io/last-applied-configuration",
  REVISION,
  REVISION_HISTORY,
  DESIRED_REPLICAS,
  MAX_REPLICAS,
  "deprecated.deployment.rollback.to",
]);

/** The alphabet of Kubernetes' rand.SafeEncodeString (no vowels: no words, no look-alikes). */
const SAFE = "bcdfghjklmnpqrstvwxz2456789";

/**
 * The pod-template-hash of `template` (with `collisionCount` mixed in after a
 * clash): a short safe string. A count of 0 is no clash (status decodes an
 * unset count as 0).
 */
export function podTemplateHash(template: PodTemplateSpec | undefined, collisionCount?: number): string {
  const h = createHash("sha256").update(templateJson(template));
  if (collisionCount) h.update(`/${collisionCount}`);
  const n = h.digest().readUInt32BE(0);
  return [...String(n)].map((c) => SAFE[c.charCodeAt(0) % SAFE.length]).join("");
}

/** The template without its pod-template-hash label. */
function withoutHash(t: PodTemplateSpec | undefined): PodTemplateSpec | undefined {
  if (!t?.metadata) return t;
  const labels = { ...t.metadata.labels };
  delete labels[HASH_LABEL];
  return { ...t, metadata: { ...t.metadata, labels } };
}

/** Whether two templates are equal but for the pod-template-hash label (Kubernetes' EqualIgnoreHash). */
export function equalIgnoreHash(a: PodTemplateSpec | undefined, b: PodTemplateSpec | undefined): boolean {
  return templateJson(withoutHash(a)) === templateJson(withoutHash(b));
}

/** spec.replicas, defaulted as the api does. */
export const replicasOf = (x: Deployment | ReplicaSet | undefined): number => x?.spec?.replicas ?? 1;

/** The revision annotation of `x` as a number (0 when absent or not a number). */
export function revisionOf(x: { metadata?: { annotations: Record<string, string> } | undefined }): number {
  const n = Number(x.metadata?.annotations[REVISION] ?? "");
  return Number.isInteger(n) && n > 0 ? n : 0;
}

/** The highest revision among `rss`. */
export const maxRevision = (rss: readonly ReplicaSet[]): number => rss.reduce((m, rs) => Math.max(m, revisionOf(rs)), 0);

export const isRollingUpdate = (d: Deployment): boolean => (d.spec?.strategy?.type || "RollingUpdate") === "RollingUpdate";

/**
 * maxSurge and maxUnavailable resolved against `desired` (Kubernetes'
 * ResolveFenceposts): a surge percentage rounds up, an unavailable one rounds
 * down; both zero would deadlock, so unavailable becomes 1.
 */
export function resolveFenceposts(d: Deployment, desired: number): { surge: number; unavailable: number } {
  const ru = d.spec?.strategy?.rollingUpdate;
  const pct25 = { value: { $case: "strVal" as const, value: "25%" } };
  const surge = scaled(ru?.maxSurge ?? pct25, desired, 0, true);
  let unavailable = scaled(ru?.maxUnavailable ?? pct25, desired, 0, false);
  if (surge === 0 && unavailable === 0) unavailable = 1;
  return { surge, unavailable };
}

/** The pods a rolling update may add above spec.replicas (0 for Recreate). */
export function maxSurge(d: Deployment): number {
  return isRollingUpdate(d) ? resolveFenceposts(d, replicasOf(d)).surge : 0;
}

/** The pods a rolling update may have unavailable, at most spec.replicas (0 for Recreate or no replicas). */
export function maxUnavailable(d: Deployment): number {
  const want = replicasOf(d);
  if (!isRollingUpdate(d) || want === 0) return 0;
  return Math.min(resolveFenceposts(d, want).unavailable, want);
}

/** Sum of spec.replicas. */
export const specReplicas = (rss: readonly (ReplicaSet | undefined)[]): number => rss.reduce((n, rs) => n + (rs ? replicasOf(rs) : 0), 0);
/** Sum of status.replicas (pods that exist). */
export const actualReplicas = (rss: readonly (ReplicaSet | undefined)[]): number => rss.reduce((n, rs) => n + (rs?.status?.replicas ?? 0), 0);
/** Sum of status.readyReplicas. */
export const readyReplicas = (rss: readonly (ReplicaSet | undefined)[]): number => rss.reduce((n, rs) => n + (rs?.status?.readyReplicas ?? 0), 0);
/** Sum of status.availableReplicas. */
export const availableReplicas = (rss: readonly (ReplicaSet | undefined)[]): number => rss.reduce((n, rs) => n + (rs?.status?.availableReplicas ?? 0), 0);

/**
 * The available pods a scale-down may count on: each set's status.availableReplicas, but never more than its
 * spec.replicas. A set already scaled down whose status still counts the pods it is about to delete (its
 * controller not yet caught up — after a kill -9 of the actor, the restarted controller reads a status written
 * before the scale-down) would let the budget go below minAvailable twice (a rollout saw 14 ready of 15).
 */
export const availableForScaleDown = (rss: readonly (ReplicaSet | undefined)[]): number =>
  rss.reduce((n, rs) => n + (rs ? Math.min(rs.status?.availableReplicas ?? 0, replicasOf(rs)) : 0), 0);

/** ReplicaSets with spec.replicas > 0. */
export const active = (rss: readonly (ReplicaSet | undefined)[]): ReplicaSet[] => rss.filter((rs): rs is ReplicaSet => rs !== undefined && replicasOf(rs) > 0);

const created = (rs: ReplicaSet): number => Date.parse(rs.metadata?.creationTimestamp ?? "") || 0;
const nameOf = (rs: ReplicaSet): string => rs.metadata?.name ?? "";

/** Oldest first; ties by name (Kubernetes' ReplicaSetsByCreationTimestamp). */
export function byCreation(a: ReplicaSet, b: ReplicaSet): number {
  return created(a) - created(b) || nameOf(a).localeCompare(nameOf(b));
}

/** Lowest revision first; ties by creation (ReplicaSetsByRevision). */
export function byRevision(a: ReplicaSet, b: ReplicaSet): number {
  return revisionOf(a) - revisionOf(b) || byCreation(a, b);
}

/** Largest first; ties newer first (ReplicaSetsBySizeNewer), or older first with `older`. */
export function bySize(older: boolean): (a: ReplicaSet, b: ReplicaSet) => number {
  return (a, b) => replicasOf(b) - replicasOf(a) || (older ? byCreation(a, b) : byCreation(b, a));
}

/** The number in an annotation, if it is one. */
export function intAnnotation(rs: ReplicaSet, key: string): number | undefined {
  const raw = rs.metadata?.annotations[key];
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  return Number.isInteger(n) ? n : undefined;
}

/** Whether `annotations` carries everything of `want` already. */
export function hasAll(annotations: Record<string, string> | undefined, want: Record<string, string>): boolean {
  return Object.entries(want).every(([k, v]) => annotations?.[k] === v);
}

/**
 * The annotations Kubernetes copies from a Deployment onto its new
 * ReplicaSet (everything but its own bookkeeping and kubectl's
 * last-applied configuration): change-cause among them.
 */
export function copiedAnnotations(d: Deployment): Record<string, string> {
  return Object.fromEntries(Object.entries(d.metadata?.annotations ?? {}).filter(([k]) => !NOT_COPIED.has(k)));
}
