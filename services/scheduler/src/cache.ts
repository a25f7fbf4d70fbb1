// The scheduler's account of the cluster: nodes and the pods on them, as
// seen by the informers plus the pods this scheduler has bound but not yet
// seen bound (assumed). Deciding reads it synchronously, so one replica
// never places two pods into the same free space.
import { keyOf } from "@choreo/kit";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { addPod, nodeInfo, podInfo, removePod, type NodeInfo, type PodInfo, type Snapshot } from "./framework.js";

const consumes = (p: Pod) => !!p.spec?.nodeName && p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed";

export class SchedulerCache implements Snapshot {
  private readonly byName = new Map<string, NodeInfo>();
  /** Pod key → the node it is accounted to. */
  private readonly placed = new Map<string, string>();
  private readonly assumedKeys = new Set<string>();
  private list: NodeInfo[] | undefined;

  get nodes(): readonly NodeInfo[] {
    this.list ??= [...this.byName.values()].filter((n) => n.node.metadata);
    return this.list;
  }

  node(name: string): NodeInfo | undefined {
    return this.byName.get(name);
  }

  isAssumed(key: string): boolean {
    return this.assumedKeys.has(key);
  }

  get assumedCount(): number {
    return this.assumedKeys.size;
  }

  setNode(node: Node): void {
    const name = node.metadata?.name ?? "";
    const old = this.byName.get(name);
    const fresh = nodeInfo(node);
    if (old) for (const p of old.pods.values()) addPod(fresh, p);
    this.byName.set(name, fresh);
    this.list = undefined;
  }

  deleteNode(name: string): void {
    const old = this.byName.get(name);
    if (!old) return;
    // Keep the pods' account on a placeholder until they go (a node re-registering finds them).
    const ghost: NodeInfo = {
      ...nodeInfo({ apiVersion: "v1", kind: "Node", metadata: undefined, spec: undefined, status: undefined }),
      name,
      pods: old.pods,
      requested: old.requested,
      hostPorts: old.hostPorts,
      owners: old.owners,
    };
    this.byName.set(name, ghost);
    this.list = undefined;
  }

  /** A pod as the informer sees it: accounted where it is bound; an assumption it confirms is dropped. */
  setPod(pod: Pod): void {
    if (!consumes(pod)) {
      // Not bound (yet): keep an assumption we made; a finished pod frees its node. (Its key only: no requests to read.)
      const key = keyOf(pod.metadata ?? { namespace: "", name: "" });
      if (!this.assumedKeys.has(key)) this.unplace(key);
      return;
    }
    const info = podInfo(pod);
    this.assumedKeys.delete(info.key);
    this.place(info, pod.spec!.nodeName);
  }

  deletePod(key: string): void {
    this.assumedKeys.delete(key);
    this.unplace(key);
  }

  /** Accounts a pod to the node this scheduler is binding it to. */
  assume(info: PodInfo, node: string): void {
    this.assumedKeys.add(info.key);
    this.place(info, node);
  }

  /** Drops an assumption (the bind failed); the informer's view stands. */
  forget(key: string): void {
    if (!this.assumedKeys.delete(key)) return;
    this.unplace(key);
  }

  private place(info: PodInfo, node: string): void {
    if (this.placed.get(info.key) !== node) this.unplace(info.key);
    let n = this.byName.get(node);
    if (!n) {
      n = { ...nodeInfo({ apiVersion: "v1", kind: "Node", metadata: undefined, spec: undefined, status: undefined }), name: node };
      this.byName.set(node, n);
    }
    addPod(n, info);
    this.placed.set(info.key, node);
  }

  private unplace(key: string): void {
    const node = this.placed.get(key);
    if (node === undefined) return;
    const n = this.byName.get(node);
    if (n) removePod(n, key);
    this.placed.delete(key);
  }
}
