import { PASS, type Filter } from "../framework.js";

/** `protocol/ip/port` keys conflict on the same protocol and port when either ip is 0.0.0.0 or both are equal. */
function conflicts(a: string, b: string): boolean {
  const [pa, ia, na] = a.split("/");
  const [pb, ib, nb] = b.split("/");
  return pa === pb && na === nb && (ia === ib || ia === "0.0.0.0" || ib === "0.0.0.0");
}

/** No host port of the pod is already taken on the node. */
export const hostPorts: Filter = {
  name: "NodePorts",
  resolvableByEviction: true,
  filter(pod, n) {
    if (pod.hostPorts.length === 0 || n.hostPorts.size === 0) return PASS;
    for (const want of pod.hostPorts) {
      for (const used of n.hostPorts.keys()) {
        if (conflicts(want, used)) return ["node(s) didn't have free ports for the requested pod ports"];
      }
    }
    return PASS;
  },
};
