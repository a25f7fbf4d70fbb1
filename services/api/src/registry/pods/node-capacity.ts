import { bytes, milliCpu } from "@choreo/kit/apimachinery";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Stored } from "../../storage/object-storage.js";

/**
 * Quantities parsed, by their text: a cluster's pods and nodes use few
 * distinct ones (`100m`, `128Mi`), and each bind parses its pod's and its
 * node's. Dropped whole past 4,096 texts. A text that does not parse is not kept (it throws each time).
 */
const milliCpuOf = new Map<string, bigint>();
const bytesOf = new Map<string, bigint>();

function parsed(kept: Map<string, bigint>, parse: (q: string) => bigint, q: string): bigint {
  let v = kept.get(q);
  if (v === undefined) {
    v = parse(q);
    if (kept.size >= 4_096) kept.clear();
    kept.set(q, v);
  }
  return v;
}

/** A quantity in thousandths (CPU in millicores). */
const milliOf = (q: string): bigint => parsed(milliCpuOf, milliCpu, q);
/** A quantity in whole units, rounded up (bytes, a pod count). */
const unitsOf = (q: string): bigint => parsed(bytesOf, bytes, q);

/** What a pod asks of its node: the sum of its containers' requests. */
export function podRequests(pod: Pod): { cpu: bigint; memory: bigint } {
  let cpu = 0n;
  let memory = 0n;
  for (const c of pod.spec?.containers ?? []) {
    const r = c.resources?.requests ?? {};
    if (r["cpu"]) cpu += milliOf(r["cpu"]);
    if (r["memory"]) memory += unitsOf(r["memory"]);
  }
  return { cpu, memory };
}

/** What a capacity check needs of one pod: who it is, whether it terminated (its share is free again), its requests. */
export interface PodShare {
  uid: string | undefined;
  terminated: boolean;
  cpu: bigint;
  memory: bigint;
}

/** The share of `pod`. */
export function podShare(pod: Pod): PodShare {
  const phase = pod.status?.phase;
  return { uid: pod.metadata?.uid, terminated: phase === "Succeeded" || phase === "Failed", ...podRequests(pod) };
}

/**
 * Why `pod` does not fit on `node` next to `others` (the pods bound there),
 * or undefined when it fits. Nodes without allocatable resources are not
 * checked. Terminated pods free their share.
 */
export function misfit(node: Node, others: readonly PodShare[], pod: PodShare): string | undefined {
  const alloc = node.status?.allocatable ?? {};
  let count = 0;
  let cpu = 0n;
  let memory = 0n;
  for (const p of others) {
    if (p.terminated || p.uid === pod.uid) continue;
    count++;
    cpu += p.cpu;
    memory += p.memory;
  }
  if (alloc["pods"] && BigInt(count + 1) > unitsOf(alloc["pods"])) return "Too many pods";
  if (alloc["cpu"] && pod.cpu > 0n && cpu + pod.cpu > milliOf(alloc["cpu"])) return "Insufficient cpu";
  if (alloc["memory"] && pod.memory > 0n && memory + pod.memory > unitsOf(alloc["memory"])) return "Insufficient memory";
  return undefined;
}

/**
 * The shares of stored pods by revision, so that a bind, which reads every
 * pod of its node, decodes and parses only the versions it has not seen
 * before. A revision is one write of one object on the storage's revision
 * line, so the share it holds never changes (the stored size is kept beside
 * it and compared, as a guard). One per storage; the oldest entries go past
 * `max`.
 */
export class PodShares {
  private readonly byRevision = new Map<number, { size: number; share: PodShare }>();
  /** Decodes and parses done (misses). */
  parsed = 0;

  constructor(private readonly max = 131_072) {}

  /** The share of the pod stored as `s`; `decode` opens it when this version was not seen. */
  of(s: Stored, decode: (s: Stored) => Pod): PodShare {
    const known = this.byRevision.get(s.revision);
    if (known && known.size === s.bytes.length) return known.share;
    const share = podShare(decode(s));
    this.parsed++;
    if (this.byRevision.size >= this.max) this.forgetOldest(Math.max(1, this.max >> 2));
    this.byRevision.set(s.revision, { size: s.bytes.length, share });
    return share;
  }

  get size(): number {
    return this.byRevision.size;
  }

  private forgetOldest(n: number): void {
    for (const k of this.byRevision.keys()) {
      if (n-- <= 0) break;
      this.byRevision.delete(k);
    }
  }
}
