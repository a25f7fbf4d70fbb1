import type { Taint, Toleration } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Filter } from "../framework.js";

/** Kubernetes' ToleratesTaint: key (empty with Exists: all keys), operator Equal/Exists, effect (empty: all). */
export function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  if (!t.key && t.operator !== "Exists") return false;
  return t.operator === "Exists" || t.value === taint.value;
}

/** The taints of a node that repel pods: NoSchedule and NoExecute (not-ready and unreachable among them). */
export const taintToleration: Filter = {
  name: "TaintToleration",
  filter(pod, n) {
    const tolerations = pod.pod.spec?.tolerations ?? [];
    for (const taint of n.node.spec?.taints ?? []) {
      if (taint.effect !== "NoSchedule" && taint.effect !== "NoExecute") continue;
      if (!tolerations.some((t) => tolerates(t, taint))) {
        return [`node(s) had untolerated taint {${taint.key}: ${taint.value}}`];
      }
    }
    return [];
  },
};
