import { untoleratedTaints } from "@choreo/kit";
import { PASS, type Filter } from "../framework.js";

/** The taints of a node that repel pods: NoSchedule and NoExecute (not-ready and unreachable among them). */
export const taintToleration: Filter = {
  name: "TaintToleration",
  resolvableByEviction: false,
  filter(pod, n) {
    if (!n.node.spec?.taints.length) return PASS;
    const [taint] = untoleratedTaints(n.node, pod.pod.spec?.tolerations ?? []);
    return taint ? [`node(s) had untolerated taint {${taint.key}: ${taint.value}}`] : PASS;
  },
};
