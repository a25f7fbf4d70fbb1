import { PASS, type Filter } from "../framework.js";

/** Every `spec.nodeSelector` label is on the node with the same value. */
export const nodeSelector: Filter = {
  name: "NodeAffinity",
  resolvableByEviction: false,
  filter(pod, n) {
    const selector = pod.pod.spec?.nodeSelector;
    if (!selector) return PASS;
    const labels = n.node.metadata?.labels ?? {};
    for (const k in selector) {
      if (labels[k] !== selector[k]) return ["node(s) didn't match Pod's node affinity/selector"];
    }
    return PASS;
  },
};
