import { PASS, type Filter } from "../framework.js";

/** Requests of the pods accounted to the node plus this pod fit its allocatable cpu, memory and pod count. */
export const fitResources: Filter = {
  name: "NodeResourcesFit",
  resolvableByEviction: true,
  filter(pod, n) {
    const pods = n.pods.size + 1 > n.allocatable.pods;
    const cpu = pod.milliCpu > 0 && n.requested.milliCpu + pod.milliCpu > n.allocatable.milliCpu;
    const memory = pod.memory > 0 && n.requested.memory + pod.memory > n.allocatable.memory;
    if (!pods && !cpu && !memory) return PASS;
    const out: string[] = [];
    if (pods) out.push("Too many pods");
    if (cpu) out.push("Insufficient cpu");
    if (memory) out.push("Insufficient memory");
    return out;
  },
};
