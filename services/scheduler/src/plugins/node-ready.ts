import { PASS, type Filter } from "../framework.js";

/** The node reports Ready=True and is not cordoned. */
export const nodeReady: Filter = {
  name: "NodeReady",
  resolvableByEviction: false,
  filter(_pod, n) {
    if (n.node.spec?.unschedulable) return ["node(s) were unschedulable"];
    return n.ready ? PASS : ["node(s) were not ready"];
  },
};
