import { bytes, milliCpu } from "@choreo/kit/apimachinery";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";

/** What a pod asks of its node: the sum of its containers' requests. */
export function podRequests(pod: Pod): { cpu: bigint; memory: bigint } {
  let cpu = 0n;
  let memory = 0n;
  for (const c of pod.spec?.containers ?? []) {
    const r = c.resources?.requests ?? {};
    if (r["cpu"]) cpu += milliCpu(r["cpu"]);
    if (r["memory"]) memory += bytes(r["memory"]);
  }
  return { cpu, memory };
}

/**
 * Why `pod` does not fit on `node` next to `others` (the pods bound there),
 * or undefined when it fits. Nodes without allocatable resources are not
 * checked. Terminated pods free their share.
 */
export function misfit(node: Node, others: Pod[], pod: Pod): string | undefined {
  const alloc = node.status?.allocatable ?? {};
  const active = others.filter((p) => p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed" && p.metadata?.uid !== pod.metadata?.uid);
  const want = podRequests(pod);
  const used = active.map(podRequests).reduce((a, b) => ({ cpu: a.cpu + b.cpu, memory: a.memory + b.memory }), { cpu: 0n, memory: 0n });
  if (alloc["pods"] && BigInt(active.length + 1) > bytes(alloc["pods"])) return "Too many pods";
  if (alloc["cpu"] && want.cpu > 0n && used.cpu + want.cpu > milliCpu(alloc["cpu"])) return "Insufficient cpu";
  if (alloc["memory"] && want.memory > 0n && used.memory + want.memory > bytes(alloc["memory"])) return "Insufficient memory";
  return undefined;
}
