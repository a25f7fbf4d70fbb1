import type { Scorer } from "../framework.js";

const fraction = (req: number, alloc: number) => (alloc <= 0 ? 0 : Math.max(0, (alloc - req) / alloc));

/** Prefers nodes with the most free cpu and memory after placing the pod (0..100). */
export const leastAllocated: Scorer = {
  name: "LeastAllocated",
  weight: 1,
  score(pod, n) {
    const cpu = fraction(n.requested.milliCpu + pod.milliCpu, n.allocatable.milliCpu);
    const mem = fraction(n.requested.memory + pod.memory, n.allocatable.memory);
    const pods = fraction(n.pods.size + 1, n.allocatable.pods);
    return (100 * (cpu + mem + pods)) / 3;
  },
};
