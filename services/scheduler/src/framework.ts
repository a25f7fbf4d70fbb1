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
  /** Whether the node reports Ready=True (read once per node version, not once per pod filtered). */
  ready: boolean;
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

/**
 * What a filter answers for a node that passes: one shared empty list (a
 * filter runs for ~100 nodes per pod). Callers only read a filter's reasons.
 */
export const PASS: string[] = [];

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

/**
 * Quantities as numbers, each distinct string parsed once: a pod's requests
 * are read at each of its events and at its scheduling, and clusters use few
 * distinct quantities ("100m", "128Mi"). Bounded: past 10,000 distinct
 * strings the memo starts over.
 */
const parsed = { milliCpu: new Map<string, number>(), bytes: new Map<string, number>() };
const MEMO_MAX = 10_000;

function num(q: string | undefined, unit: "milliCpu" | "bytes"): number {
  if (!q) return 0;
  const memo = parsed[unit];
  let v = memo.get(q);
  if (v === undefined) {
    v = Number(unit === "milliCpu" ? milliCpu(q) : bytes(q));
    if (memo.size >= MEMO_MAX) memo.clear();
    memo.set(q, v);
  }
  return v;
}

/** A pod without host ports (most): one shared empty list, only ever read. */
const NO_HOST_PORTS: string[] = [];

function containerRequests(cs: readonly Container[]): { milliCpu: number; memory: number } {
  let cpu = 0;
  let memory = 0;
  for (const c of cs) {
    const requests = c.resources?.requests;
    if (!requests) continue;
    cpu += num(requests.cpu, "milliCpu");
    memory += num(requests.memory, "bytes");
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
  let hostPorts = NO_HOST_PORTS;
  for (const c of spec?.containers ?? []) {
    for (const p of c.ports) {
      if (p.hostPort <= 0) continue;
      if (hostPorts === NO_HOST_PORTS) hostPorts = [];
      hostPorts.push(`${p.protocol || "TCP"}/${p.hostIp || "0.0.0.0"}/${p.hostPort}`);
    }
  }
  const meta = pod.metadata;
  return {
    key: keyOf(meta ?? { namespace: "", name: "" }),
    uid: meta?.uid ?? "",
    pod,
    milliCpu: sum.milliCpu,
    memory: sum.memory,
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
    allocatable: { milliCpu: num(a.cpu, "milliCpu"), memory: num(a.memory, "bytes"), pods: num(a.pods, "bytes") },
    ready: node.status?.conditions.find((c) => c.type === "Ready")?.status === "True",
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
