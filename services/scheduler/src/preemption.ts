// Priority and preemption (Borg): when a pod fits nowhere, find the node
// where evicting the fewest, lowest-priority pods makes it fit (pure).
//   1. a node must pass the stack's filters that evictions cannot change
//      (`resolvableByEviction: false`: ready, nodeSelector, taints);
//   2. remove every pod of strictly lower priority; if the pod still does not
//      fit, the node is out;
//   3. give pods back, highest priority first, while the pod still fits —
//      those are spared; the rest are the victims;
//   4. the best node: fewest victims, then the lowest highest-victim
//      priority, then the lowest sum of victim priorities.
import { addPod, type Filter, type NodeInfo, type PodInfo, type Snapshot } from "./framework.js";
import { FILTERS } from "./stack.js";

/** The stack's filters split by whether evictions can satisfy them. */
export function splitFilters(filters: readonly Filter[]): { fixed: Filter[]; room: Filter[] } {
  return { fixed: filters.filter((f) => !f.resolvableByEviction), room: filters.filter((f) => f.resolvableByEviction) };
}

const { fixed: STATIC_FILTERS, room: ROOM_FILTERS } = splitFilters(FILTERS);

export const priorityOf = (p: PodInfo): number => p.pod.spec?.priority ?? 0;

/** Whether the pod may preempt at all. */
export function canPreempt(p: PodInfo): boolean {
  return p.pod.spec?.preemptionPolicy !== "Never" && priorityOf(p) > 0;
}

/** A node and the pods to evict from it. */
export interface Preemption {
  node: string;
  victims: PodInfo[];
}

/** A copy of the node's accounts holding only `pods`. */
export function nodeWith(n: NodeInfo, pods: Iterable<PodInfo>): NodeInfo {
  const copy: NodeInfo = { ...n, requested: { milliCpu: 0, memory: 0 }, pods: new Map(), hostPorts: new Map(), owners: new Map() };
  for (const p of pods) addPod(copy, p);
  return copy;
}

const fits = (pod: PodInfo, n: NodeInfo): boolean => ROOM_FILTERS.every((f) => f.filter(pod, n).length === 0);

/** The victims on one node, or undefined when evicting cannot make room. */
export function victimsOn(pod: PodInfo, n: NodeInfo): PodInfo[] | undefined {
  if (STATIC_FILTERS.some((f) => f.filter(pod, n).length > 0)) return undefined;
  const prio = priorityOf(pod);
  const lower = [...n.pods.values()].filter((p) => priorityOf(p) < prio && !p.pod.metadata?.deletionTimestamp);
  if (lower.length === 0) return undefined;
  const keep = [...n.pods.values()].filter((p) => !lower.includes(p));
  if (!fits(pod, nodeWith(n, keep))) return undefined;
  // Spare the most important pods first; ties: the older pod is spared.
  const byImportance = [...lower].sort(
    (a, b) => priorityOf(b) - priorityOf(a) || (a.pod.metadata?.creationTimestamp ?? "").localeCompare(b.pod.metadata?.creationTimestamp ?? ""),
  );
  const victims: PodInfo[] = [];
  for (const p of byImportance) {
    if (fits(pod, nodeWith(n, [...keep, p]))) keep.push(p);
    else victims.push(p);
  }
  return victims;
}

/** The best preemption on the snapshot, if any node can make room. */
export function findPreemption(pod: PodInfo, snapshot: Snapshot): Preemption | undefined {
  let best: { node: string; victims: PodInfo[]; rank: [number, number, number] } | undefined;
  for (const n of snapshot.nodes) {
    const victims = victimsOn(pod, n);
    if (!victims || victims.length === 0) continue;
    const prios = victims.map(priorityOf);
    const rank: [number, number, number] = [victims.length, Math.max(-Infinity, ...prios), prios.reduce((a, b) => a + b, 0)];
    if (!best || rank[0] < best.rank[0] || (rank[0] === best.rank[0] && (rank[1] < best.rank[1] || (rank[1] === best.rank[1] && rank[2] < best.rank[2])))) {
      best = { node: n.name, victims, rank };
    }
  }
  return best && { node: best.node, victims: best.victims };
}
