import { PodSpec, PodStatus, type Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { canonicalJson } from "../shared/canonical.js";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { Strategy } from "../generic/strategy.js";
import { defaultPodSpec, qosClass, validatePodSpec } from "./pod-spec.js";
import { Errors } from "../shared/validation.js";
import { INVALID_IP, isIP } from "../shared/ip.js";
import { podGracePeriod, podWaitsForNode } from "./graceful-deletion.js";
import {
  inEphemeralContainersWrite,
  keepOnlyEphemeralContainers,
  refuseEphemeralContainers,
  validateEphemeralContainersUpdate,
} from "./ephemeral-containers.js";

function comparableSpec(p: Pod, withEphemeral: boolean): string {
  // A copy to blank what may change (PodSpec's fromPartial copies every field).
  const spec = p.spec ? PodSpec.fromPartial(p.spec) : undefined;
  if (!spec) return "";
  // Changed through pods/ephemeralcontainers only.
  if (!withEphemeral) spec.ephemeralContainers = [];
  // What Kubernetes lets an update change on a pod.
  for (const c of [...spec.containers, ...spec.initContainers]) c.image = "";
  spec.activeDeadlineSeconds = undefined;
  spec.tolerations = [];
  spec.terminationGracePeriodSeconds = undefined;
  return canonicalJson(spec);
}

/**
 * Kubernetes' validatePodIPs and hostIP check on the status a node writes:
 * valid IPs, podIPs[0] the podIP. (The endpoints controller copies podIP into
 * Endpoints, whose validation refuses loopback and link-local addresses.)
 */
function validatePodIps(e: Errors, pod: Pod): void {
  const st = pod.status;
  if (!st) return;
  if (st.podIp && !isIP(st.podIp)) e.invalid("status.podIP", st.podIp, INVALID_IP);
  st.podIps.forEach((p, i) => {
    if (!isIP(p.ip)) e.invalid(`status.podIPs[${i}].ip`, p.ip, INVALID_IP);
  });
  if (st.podIps.length > 0 && st.podIps[0]?.ip !== st.podIp) e.invalid("status.podIPs[0].ip", st.podIps[0]?.ip, "must be equal to `podIP`");
  if (st.hostIp && !isIP(st.hostIp)) e.invalid("status.hostIP", st.hostIp, INVALID_IP);
}

/** Pods: defaults, validation, Pending status at create, node index, graceful deletion (Pod Security: pod-security/). */
export const podStrategy: Strategy<Pod> = {
  prepareCreate(pod) {
    if (pod.spec) defaultPodSpec(pod.spec);
    const bound = Boolean(pod.spec?.nodeName);
    pod.status = PodStatus.fromPartial({
      phase: "Pending",
      conditions: bound ? [{ type: "PodScheduled", status: "True", lastProbeTime: "", lastTransitionTime: nowRfc3339(), reason: "", message: "" }] : [],
      qosClass: pod.spec ? qosClass(pod.spec) : "BestEffort",
    });
  },
  prepareUpdate(pod, old, scope) {
    if (inEphemeralContainersWrite(scope)) keepOnlyEphemeralContainers(pod, old);
    if (pod.spec) defaultPodSpec(pod.spec);
    // nodeName is set by binding only.
    if (pod.spec && old.spec && !pod.spec.nodeName) pod.spec.nodeName = old.spec.nodeName;
  },
  validate(pod, old, scope) {
    const e = new Errors();
    validatePodSpec(e, pod.spec, "spec");
    validatePodIps(e, pod);
    if (!old) refuseEphemeralContainers(e, pod.spec, "spec", "cannot be set on create");
    const viaSubresource = inEphemeralContainersWrite(scope);
    if (old && viaSubresource) validateEphemeralContainersUpdate(e, pod, old);
    if (old && comparableSpec(pod, !viaSubresource) !== comparableSpec(old, !viaSubresource)) {
      e.forbidden(
        "spec",
        "pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations), `spec.terminationGracePeriodSeconds`",
      );
    }
    return e.causes;
  },
  indexes: (pod): Record<string, string> => (pod.spec?.nodeName ? { node: pod.spec.nodeName } : {}),
  node: (pod) => pod.spec?.nodeName ?? "",
  gracePeriod: podGracePeriod,
  waitsAfterFinalizers: podWaitsForNode,
};
