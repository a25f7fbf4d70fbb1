import type { Filter } from "../framework.js";

/** Every `spec.nodeSelector` label is on the node with the same value. */
export const nodeSelector: Filter = {
  name: "NodeAffinity",
  resolvableByEviction: false,
  filter(pod, n) {
    const labels = n.node.metadata?.labels ?? {};
    for (const [k, v] of Object.entries(pod.pod.spec?.nodeSelector ?? {})) {
      if (labels[k] !== v) return ["node(s) didn't match Pod's node affinity/selector"];
    }
    return [];
  },
};
