// The pods/ephemeralcontainers subresource (Kubernetes' podEphemeralContainersStrategy
// and ValidatePodEphemeralContainersUpdate): a write through it takes only
// spec.ephemeralContainers from the request, everything else as stored.
import type { EphemeralContainer, Pod, PodSpec } from "@choreo/kit/gen/choreo/core/v1/core";
import type { RequestScope } from "../generic/request-scope.js";
import { canonicalJson } from "../shared/canonical.js";
import type { Errors } from "../shared/validation.js";
import { WHY } from "./unenforced.js";

/** The subresource's name in paths and requests. */
export const EPHEMERAL_CONTAINERS = "ephemeralcontainers";

/** The scope part of a write through pods/ephemeralcontainers (the pod strategy reads it). */
export const EPHEMERAL_CONTAINERS_SCOPE: RequestScope = { ephemeralContainers: true };

/** Whether the write in progress came through pods/ephemeralcontainers. */
export function inEphemeralContainersWrite(scope: RequestScope | undefined): boolean {
  return scope?.ephemeralContainers === true;
}

/**
 * The subresource's PrepareForUpdate (dropNonEphemeralContainerUpdates):
 * `pod` becomes the stored pod with the request's ephemeral containers and
 * resourceVersion (a precondition); labels, the rest of the spec and the
 * status sent with it are dropped.
 */
export function keepOnlyEphemeralContainers(pod: Pod, old: Pod): void {
  const wanted = pod.spec?.ephemeralContainers ?? [];
  const resourceVersion = pod.metadata?.resourceVersion ?? "";
  pod.metadata = old.metadata ? { ...structuredClone(old.metadata), resourceVersion } : undefined;
  pod.spec = old.spec ? { ...structuredClone(old.spec), ephemeralContainers: wanted } : undefined;
}

/** Kubernetes' defaults of an ephemeral container (those of any container it has fields for). */
export function defaultEphemeralContainer(c: EphemeralContainer): void {
  if (!c.imagePullPolicy) {
    const tag = c.image.includes("@") ? "digest" : c.image.split("/").pop()?.split(":")[1];
    c.imagePullPolicy = tag === undefined || tag === "latest" ? "Always" : "IfNotPresent";
  }
  c.terminationMessagePath ||= "/dev/termination-log";
  c.terminationMessagePolicy ||= "File";
}

const CANNOT = "cannot be set for an Ephemeral Container";

/**
 * What an ephemeral container may not have beyond the rules of every
 * container (validateEphemeralContainers): ports, probes, resources,
 * lifecycle, a restart policy, a resize policy, subPath mounts; and its
 * target must be a container of the pod.
 */
export function validateEphemeralContainer(e: Errors, c: EphemeralContainer, f: string, spec: PodSpec): void {
  if (c.ports.length) e.forbidden(`${f}.ports`, CANNOT);
  for (const k of ["livenessProbe", "readinessProbe", "startupProbe", "lifecycle"] as const) if (c[k]) e.forbidden(`${f}.${k}`, CANNOT);
  const r = c.resources;
  if (r && (Object.keys(r.limits).length || Object.keys(r.requests).length || r.claims.length)) e.forbidden(`${f}.resources`, CANNOT);
  if (c.restartPolicy !== undefined) e.forbidden(`${f}.restartPolicy`, CANNOT);
  if (c.resizePolicy.length) e.forbidden(`${f}.resizePolicy`, CANNOT);
  c.volumeMounts.forEach((m, j) => {
    if (m.subPath) e.forbidden(`${f}.volumeMounts[${j}].subPath`, CANNOT);
  });
  // ConfigMap and Secret references are resolved when the pod starts (the node agent's config-sources), not for a
  // container added later: refused rather than started without them (docs/stored-only-fields.md).
  c.env.forEach((v, j) => {
    if (v.valueFrom?.configMapKeyRef) e.forbidden(`${f}.env[${j}].valueFrom.configMapKeyRef`, WHY);
    if (v.valueFrom?.secretKeyRef) e.forbidden(`${f}.env[${j}].valueFrom.secretKeyRef`, WHY);
  });
  if (c.envFrom.length) e.forbidden(`${f}.envFrom`, WHY);
  const t = c.targetContainerName;
  if (t && !spec.containers.some((x) => x.name === t) && !spec.initContainers.some((x) => x.name === t)) {
    e.causes.push({ field: `${f}.targetContainerName`, reason: "FieldValueNotFound", message: `Not found: ${JSON.stringify(t)}` });
  }
}

/** A pod create, or a pod template, may not carry ephemeral containers (ValidatePodCreate, ValidatePodTemplateSpec). */
export function refuseEphemeralContainers(e: Errors, spec: PodSpec | undefined, path: string, why: string): void {
  if (spec?.ephemeralContainers.length) e.forbidden(`${path}.ephemeralContainers`, why);
}

/** Existing ephemeral containers can be neither removed nor changed (ValidatePodEphemeralContainersUpdate). */
export function validateEphemeralContainersUpdate(e: Errors, pod: Pod, old: Pod): void {
  const now = new Map((pod.spec?.ephemeralContainers ?? []).map((c) => [c.name, c]));
  for (const before of old.spec?.ephemeralContainers ?? []) {
    const after = now.get(before.name);
    if (!after) e.forbidden("spec.ephemeralContainers", `existing ephemeral containers ${JSON.stringify(before.name)} may not be removed`);
    else if (canonicalJson(after) !== canonicalJson(before))
      e.forbidden("spec.ephemeralContainers", `existing ephemeral containers ${JSON.stringify(before.name)} may not be changed`);
  }
}
