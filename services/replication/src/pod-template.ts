// Pods stamped from a controller's template, owned by it: the shared half of
// every workload controller (RC, DaemonSet, Job).
import { emptyMeta } from "@choreo/kit";
import type { Pod, PodTemplateSpec } from "@choreo/kit/gen/choreo/core/v1/core";
import { messageToKubeJson } from "@choreo/kit/kube-json";
import type { ObjectMeta, OwnerReference } from "@choreo/kit/gen/choreo/meta/v1/meta";

/** An owning object: kind and apiVersion say what it is. */
export interface Owner {
  kind: string;
  apiVersion: string;
  metadata?: ObjectMeta | undefined;
}

/** The ownerReference a controller puts on what it creates (controller=true, blockOwnerDeletion=true). */
export function controllerRef(owner: Owner): OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata?.name ?? "",
    uid: owner.metadata?.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The controller ownerReference of `meta`, if any. */
export function controllerOf(meta: ObjectMeta | undefined): OwnerReference | undefined {
  return meta?.ownerReferences.find((r) => r.controller === true);
}

/** Whether `meta` is controlled by the object with `uid`. */
export function isControlledBy(meta: ObjectMeta | undefined, uid: string): boolean {
  return controllerOf(meta)?.uid === uid;
}

/** Options of {@link podFromTemplate}. */
export interface PodFromTemplateOptions {
  /** Bind directly (DaemonSet pods name their node through affinity in Kubernetes; we set spec.nodeName). */
  nodeName?: string;
  /** Extra labels on the pod (beyond the template's). */
  labels?: Record<string, string>;
  /** The name prefix; default `<owner name>-`. */
  generateName?: string;
}

/** A new pod from `template`, with a controller ownerReference to `owner` and a generated name. */
export function podFromTemplate(template: PodTemplateSpec | undefined, owner: Owner, opts: PodFromTemplateOptions = {}): Pod {
  const t = structuredClone(template ?? { metadata: undefined, spec: undefined });
  const tm = t.metadata;
  const ownerMeta = owner.metadata;
  const metadata = emptyMeta({
    namespace: ownerMeta?.namespace ?? "",
    generateName: opts.generateName ?? `${ownerMeta?.name ?? "pod"}-`,
    labels: { ...(tm?.labels ?? {}), ...(opts.labels ?? {}) },
    annotations: { ...(tm?.annotations ?? {}) },
    ownerReferences: [controllerRef(owner)],
    finalizers: [...(tm?.finalizers ?? [])],
  });
  if (!t.spec) throw new Error(`${owner.kind} ${ownerMeta?.namespace ?? ""}/${ownerMeta?.name ?? ""} has no pod template spec`);
  const spec = t.spec;
  if (opts.nodeName) spec.nodeName = opts.nodeName;
  return { apiVersion: "v1", kind: "Pod", metadata, spec, status: undefined };
}

/** Whether the pod is Running (or Pending) and not being deleted: counts toward replicas. */
export function isActive(p: Pod): boolean {
  const phase = p.status?.phase ?? "";
  return phase !== "Succeeded" && phase !== "Failed" && !p.metadata?.deletionTimestamp;
}

/** Whether the pod's Ready condition is True. */
export function isReady(p: Pod): boolean {
  return p.status?.conditions.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

/** Whether the pod has been Ready for at least `minReadySeconds` at `nowMs`. */
export function isAvailable(p: Pod, minReadySeconds: number, nowMs: number): boolean {
  const c = p.status?.conditions.find((x) => x.type === "Ready" && x.status === "True");
  if (!c) return false;
  if (minReadySeconds <= 0) return true;
  const since = Date.parse(c.lastTransitionTime);
  return Number.isFinite(since) && since + minReadySeconds * 1000 <= nowMs;
}

/** JSON with object keys sorted: equal values give equal strings (template hashes and comparisons). */
export function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : x,
  );
}

/**
 * The template as canonical Kubernetes JSON: what it means, not how it was
 * decoded (an unset and a zero field are the same, as in the api's store).
 * Template hashes and comparisons are taken over it.
 */
export function templateJson(t: PodTemplateSpec | undefined): string {
  return t ? canonical(messageToKubeJson("choreo.core.v1.PodTemplateSpec", t)) : "null";
}
