import type { AppArmorProfile, Container, PodSecurityContext, PodSpec, SecurityContext, SELinuxOptions } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Errors } from "../shared/validation.js";

/**
 * Kubernetes fields choreo stores but does not act on, where silently
 * ignoring them would be unsafe: they ask for *less* privilege than choreo's
 * runtimes give, for a scheduling constraint the scheduler does not honour,
 * or for data (volumes) the node agent does not deliver. Each is refused
 * with 422 Invalid naming the field; the list and the reasons are in
 * docs/stored-only-fields.md (keep both in step).
 */
export const WHY = "choreo stores this field but does not enforce it yet; refused rather than silently ignored (docs/stored-only-fields.md)";

/** Refuses the unenforced fields of a pod spec at `path` (also inside workload templates). */
export function refuseUnenforced(e: Errors, spec: PodSpec, path: string): void {
  const no = (field: string): void => e.forbidden(`${path}.${field}`, WHY);
  if (spec.securityContext) podSecurityContext(spec.securityContext, (f) => no(`securityContext.${f}`));
  const a = spec.affinity;
  if (a?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution) no("affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution");
  if (a?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution.length) no("affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution");
  if (a?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution.length) no("affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution");
  spec.topologySpreadConstraints.forEach((t, i) => {
    if (t.whenUnsatisfiable !== "ScheduleAnyway") no(`topologySpreadConstraints[${i}].whenUnsatisfiable`);
  });
  if (spec.schedulingGates.length) no("schedulingGates");
  if (spec.readinessGates.length) no("readinessGates");
  if (spec.runtimeClassName) no("runtimeClassName");
  if (spec.hostUsers === false) no("hostUsers");
  if (spec.resourceClaims.length) no("resourceClaims");
  spec.volumes.forEach((v, i) => {
    if (v.persistentVolumeClaim) no(`volumes[${i}].persistentVolumeClaim`);
    // configMap, secret, downwardAPI and projected volumes (serviceAccountToken sources too) are written by the node agent.
  });
  spec.initContainers.forEach((c, i) => container(c, `initContainers[${i}]`, no));
  spec.containers.forEach((c, i) => container(c, `containers[${i}]`, no));
  spec.ephemeralContainers.forEach((c, i) => container(c, `ephemeralContainers[${i}]`, no));
}

function container(c: Container, at: string, no: (field: string) => void): void {
  if (c.securityContext) containerSecurityContext(c.securityContext, (f) => no(`${at}.securityContext.${f}`));
  // A sidecar (restartPolicy: Always) never completes: run as an init container it would hold the pod forever.
  if (c.restartPolicy) no(`${at}.restartPolicy`);
  if (c.volumeDevices.length) no(`${at}.volumeDevices`);
  c.volumeMounts.forEach((m, j) => {
    if (m.subPathExpr) no(`${at}.volumeMounts[${j}].subPathExpr`);
    if (m.recursiveReadOnly === "Enabled") no(`${at}.volumeMounts[${j}].recursiveReadOnly`);
  });
  for (const [name, probe] of [
    ["livenessProbe", c.livenessProbe],
    ["readinessProbe", c.readinessProbe],
    ["startupProbe", c.startupProbe],
  ] as const)
    if (probe?.grpc) no(`${at}.${name}.grpc`);
}

/**
 * The pod-level fields asking for less privilege than choreo gives. The
 * node agents act on runAsUser/Group, runAsNonRoot, supplementalGroups,
 * fsGroup, seccompProfile, and (per container) readOnlyRootFilesystem,
 * allowPrivilegeEscalation, capabilities and privileged
 * (services/node-agent/src/runtime/security-context.ts); what is left here
 * has no runtime support.
 */
function podSecurityContext(s: PodSecurityContext, no: (field: string) => void): void {
  common(s, no);
  if (s.sysctls.length) no("sysctls");
}

function containerSecurityContext(s: SecurityContext, no: (field: string) => void): void {
  common(s, no);
}

function common(s: { appArmorProfile?: AppArmorProfile; seLinuxOptions?: SELinuxOptions }, no: (field: string) => void): void {
  if (s.appArmorProfile && s.appArmorProfile.type !== "Unconfined") no("appArmorProfile");
  const se = s.seLinuxOptions;
  if (se && (se.user || se.role || se.type || se.level)) no("seLinuxOptions");
}
