import { untoleratedTaints } from "@choreo/kit";
import type { Filter } from "../framework.js";

/** The taints of a node that repel pods: NoSchedule and NoExecute (not-ready and unreachable among them). */
export const taintToleration: Filter = {
  name: "TaintToleration",
  resolvableByEviction: false,
  filter(pod, n) {
    const [taint] = untoleratedTaints(n.node, pod.pod.spec?.tolerations ?? []);
    return taint ? [`node(s) had untolerated taint {${taint.key}: ${taint.value}}`] : [];
  },
};
