import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { canonicalJson } from "./canonical.js";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { Strategy } from "./strategy.js";
import { defaultPodSpec, qosClass, validatePodSpec } from "./pod-spec.js";
import { Errors } from "./validation.js";
import { checkHostPaths } from "./host-path-policy.js";

function comparableSpec(p: Pod): string {
  const spec = structuredClone(p.spec);
  if (!spec) return "";
  // What Kubernetes lets an update change on a pod.
  for (const c of [...spec.containers, ...spec.initContainers]) c.image = "";
  spec.activeDeadlineSeconds = undefined;
  spec.tolerations = [];
  spec.terminationGracePeriodSeconds = undefined;
  return canonicalJson(spec);
}

/** Pods: defaults, validation, Pending status at create, node index. */
export const podStrategy: Strategy<Pod> = {
  prepareCreate(pod) {
    checkHostPaths(pod);
    if (pod.spec) defaultPodSpec(pod.spec);
    const bound = Boolean(pod.spec?.nodeName);
    pod.status = {
      phase: "Pending",
      conditions: bound ? [{ type: "PodScheduled", status: "True", lastProbeTime: "", lastTransitionTime: nowRfc3339(), reason: "", message: "" }] : [],
      message: "", reason: "", nominatedNodeName: "", hostIp: "", podIp: "", podIps: [], startTime: "",
      initContainerStatuses: [], containerStatuses: [],
      qosClass: pod.spec ? qosClass(pod.spec) : "BestEffort",
    };
  },
  prepareUpdate(pod, old) {
    if (pod.spec) defaultPodSpec(pod.spec);
    // nodeName is set by binding only.
    if (pod.spec && old.spec && !pod.spec.nodeName) pod.spec.nodeName = old.spec.nodeName;
  },
  validate(pod, old) {
    const e = new Errors();
    validatePodSpec(e, pod.spec, "spec");
    if (old && comparableSpec(pod) !== comparableSpec(old)) {
      e.forbidden("spec", "pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations), `spec.terminationGracePeriodSeconds`");
    }
    return e.causes;
  },
  indexes: (pod): Record<string, string> => (pod.spec?.nodeName ? { node: pod.spec.nodeName } : {}),
  node: (pod) => pod.spec?.nodeName ?? "",
};
