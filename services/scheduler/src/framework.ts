// The scheduler's vocabulary: what a plugin sees (PodInfo, NodeInfo) and
// what it is (a Filter or a Scorer). Plugins are pure functions of these.
import { keyOf } from "@choreo/kit";
import { bytes, milliCpu } from "@choreo/kit/apimachinery";
import type { Container, Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";

/** What scheduling needs to know of a pod, computed once per pod. */
export interface PodInfo {
  key: string;
  uid: string;
  pod: Pod;
  milliCpu: number;
  memory: number;
  /** `protocol/hostIP/port` of each host port the pod asks for. */
  hostPorts: string[];
  /** The uid of its controller (ownerReference with controller=true), if any. */
  owner: string | undefined;
}

/** A node with the pods accounted to it (bound in the cache, or assumed). */
export interface NodeInfo {
  name: string;
  node: Node;
  allocatable: { milliCpu: number; memory: number; pods: number };
  requested: { milliCpu: number; memory: number };
  pods: Map<string, PodInfo>;
  /** Host ports in use → how many pods use them. */
  hostPorts: Map<string, number>;
  /** Controller uid → how many of its pods are here. */
  owners: Map<string, number>;
}

/** The state one scheduling decision reads. */
export interface Snapshot {
  nodes: readonly NodeInfo[];
}

/** A feasibility check: the reasons this node cannot run the pod (empty: it can). */
export interface Filter {
  name: string;
  /** Whether evicting pods from the node can make this filter pass (preemption tries only those). */
  resolvableByEviction: boolean;
  filter(pod: PodInfo, node: NodeInfo): string[];
}

/** A ranker: a raw score per node, optionally normalised to 0..100 over the feasible nodes. */
export interface Scorer {
  name: string;
  weight: number;
  score(pod: PodInfo, node: NodeInfo): number;
  normalize?(scores: number[]): void;
}

const num = (q: string | undefined, parse: (s: string) => bigint): number => (q ? Number(parse(q)) : 0);

function containerRequests(cs: readonly Container[]): { milliCpu: number; memory: number } {
  let cpu = 0;
  let memory = 0;
  for (const c of cs) {
    cpu += num(c.resources?.requests.cpu, milliCpu);
    memory += num(c.resources?.requests.memory, bytes);
  }
  return { milliCpu: cpu, memory };
}

/** A pod's scheduling facts: requests are max(sum of containers, largest init container), like Kubernetes. */
export function podInfo(pod: Pod): PodInfo {
  const spec = pod.spec;
  const sum = containerRequests(spec?.containers ?? []);
  for (const ic of spec?.initContainers ?? []) {
    const one = containerRequests([ic]);
    sum.milliCpu = Math.max(sum.milliCpu, one.milliCpu);
    sum.memory = Math.max(sum.memory, one.memory);
  }
  const hostPorts = (spec?.containers ?? []).flatMap((c) =>
    c.ports.filter((p) => p.hostPort > 0).map((p) => `${p.protocol || "TCP"}/${p.hostIp || "0.0.0.0"}/${p.hostPort}`),
  );
  const meta = pod.metadata;
  return {
    key: keyOf(meta ?? { namespace: "", name: "" }),
    uid: meta?.uid ?? "",
    pod,
    ...sum,
    hostPorts,
    owner: meta?.ownerReferences.find((o) => o.controller)?.uid,
  };
}

/** A NodeInfo with no pods yet. */
export function nodeInfo(node: Node): NodeInfo {
  const a = node.status?.allocatable ?? {};
  return {
    name: node.metadata?.name ?? "",
    node,
    allocatable: { milliCpu: num(a.cpu, milliCpu), memory: num(a.memory, bytes), pods: num(a.pods, bytes) },
    requested: { milliCpu: 0, memory: 0 },
    pods: new Map(),
    hostPorts: new Map(),
    owners: new Map(),
  };
}

const bump = (m: Map<string, number>, k: string, d: number) => {
  const v = (m.get(k) ?? 0) + d;
  if (v <= 0) m.delete(k);
  else m.set(k, v);
};

/** Accounts a pod to a node (idempotent per pod key). */
export function addPod(n: NodeInfo, p: PodInfo): void {
  if (n.pods.has(p.key)) removePod(n, p.key);
  n.pods.set(p.key, p);
  n.requested.milliCpu += p.milliCpu;
  n.requested.memory += p.memory;
  for (const hp of p.hostPorts) bump(n.hostPorts, hp, 1);
  if (p.owner) bump(n.owners, p.owner, 1);
}

/** Removes a pod's account from a node. */
export function removePod(n: NodeInfo, key: string): void {
  const p = n.pods.get(key);
  if (!p) return;
  n.pods.delete(key);
  n.requested.milliCpu -= p.milliCpu;
  n.requested.memory -= p.memory;
  for (const hp of p.hostPorts) bump(n.hostPorts, hp, -1);
  if (p.owner) bump(n.owners, p.owner, -1);
}
