import type { Filter } from "../framework.js";

/** Requests of the pods accounted to the node plus this pod fit its allocatable cpu, memory and pod count. */
export const fitResources: Filter = {
  name: "NodeResourcesFit",
  resolvableByEviction: true,
  filter(pod, n) {
    const out: string[] = [];
    if (n.pods.size + 1 > n.allocatable.pods) out.push("Too many pods");
    if (pod.milliCpu > 0 && n.requested.milliCpu + pod.milliCpu > n.allocatable.milliCpu) out.push("Insufficient cpu");
    if (pod.memory > 0 && n.requested.memory + pod.memory > n.allocatable.memory) out.push("Insufficient memory");
    return out;
  },
};
