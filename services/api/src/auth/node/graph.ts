// The node authorizer's graph (Kubernetes' plugin/pkg/auth/authorizer/node
// graph.go, reduced to what choreo stores): pod → node, and node → the
// Secrets, ConfigMaps, PVCs and ServiceAccounts its pods use, counted (two
// pods of a node using one Secret: it stays readable until both are gone).
// Kept from the api's own list and watch of pods (PodGraphWatch).
import { ApiError, failure, keyOf, Reason } from "@choreo/kit";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { ApiHandlers } from "../../handlers/api-handlers.js";
import { podReferences, type ReferenceKind } from "./pod-references.js";
import { ListWatchLoop, type ListWatchLoopOptions } from "../list-watch-loop.js";

interface PodEntry {
  node: string;
  /** `kind/namespace/name` of each object the pod uses. */
  uses: string[];
}

const useKey = (kind: ReferenceKind, namespace: string, name: string): string => `${kind}/${namespace}/${name}`;

/** Pods by node and what each node's pods use; all in memory, changed by `put`, `remove` and `replace`. */
export class NodeGraph {
  private readonly pods = new Map<string, PodEntry>();
  /** node → `kind/ns/name` → how many of its pods use it. */
  private readonly edges = new Map<string, Map<string, number>>();

  /** Pods known (bound or not). */
  get size(): number {
    return this.pods.size;
  }

  /** The node pod `namespace/name` is bound to: "" while unbound, undefined when the graph does not know the pod. */
  podNode(namespace: string, name: string): string | undefined {
    return this.pods.get(keyOf({ namespace, name }))?.node;
  }

  /** Whether a pod bound to `node` uses the `kind` object `namespace/name`. */
  uses(node: string, kind: ReferenceKind, namespace: string, name: string): boolean {
    return (this.edges.get(node)?.get(useKey(kind, namespace, name)) ?? 0) > 0;
  }

  /** A pod added or changed (bound, its spec grown by an ephemeral container). */
  put(pod: Pod): void {
    const meta = pod.metadata;
    if (!meta) return;
    const key = keyOf(meta);
    this.drop(key);
    const node = pod.spec?.nodeName ?? "";
    const uses: string[] = [];
    if (node) {
      const refs = podReferences(pod);
      for (const kind of Object.keys(refs) as ReferenceKind[]) for (const name of refs[kind]) uses.push(useKey(kind, meta.namespace, name));
      let m = this.edges.get(node);
      if (!m) this.edges.set(node, (m = new Map()));
      for (const u of uses) m.set(u, (m.get(u) ?? 0) + 1);
    }
    this.pods.set(key, { node, uses });
  }

  /** A pod deleted. */
  remove(pod: Pick<Pod, "metadata">): void {
    if (pod.metadata) this.drop(keyOf(pod.metadata));
  }

  /** Exactly `pods` (a relist). */
  replace(pods: Iterable<Pod>): void {
    this.pods.clear();
    this.edges.clear();
    for (const p of pods) this.put(p);
  }

  private drop(key: string): void {
    const old = this.pods.get(key);
    if (!old) return;
    this.pods.delete(key);
    const m = this.edges.get(old.node);
    if (!m) return;
    for (const u of old.uses) {
      const n = (m.get(u) ?? 0) - 1;
      if (n > 0) m.set(u, n);
      else m.delete(u);
    }
    if (m.size === 0) this.edges.delete(old.node);
  }
}

export interface PodGraphWatchOptions extends ListWatchLoopOptions {
  handlers: Pick<ApiHandlers, "list" | "watch">;
  graph: NodeGraph;
}

/**
 * Keeps a NodeGraph from the api's handlers: a list of every pod, then a
 * watch from the list's revision; a watch that ends resumes from the last
 * revision seen, one that fails (410 Expired, an ERROR event) relists after
 * a backoff. `waitSynced` resolves after the first list: the doors open then
 * (before it, every node's read of its own Secrets would be refused). While
 * `stale()` (nats-server away: the store takes writes the watch cannot show)
 * it relists every second, as the RBAC cache does.
 */
export class PodGraphWatch extends ListWatchLoop {
  readonly name = "node-authorizer-graph";

  constructor(private readonly opts: PodGraphWatchOptions) {
    super(opts, "node graph");
  }

  protected async list(): Promise<string> {
    const pods: Pod[] = [];
    let cont = "";
    let revision = "";
    do {
      const page = await this.opts.handlers.list({ resource: "pods", namespace: "", labelSelector: "", fieldSelector: "", limit: 5_000, continue: cont });
      for (const o of page.items) if (o.kind?.$case === "pod") pods.push(o.kind.value);
      cont = page.metadata?.continue ?? "";
      if (!revision) revision = page.metadata?.resourceVersion ?? "";
    } while (cont);
    this.opts.graph.replace(pods);
    this.opts.log.info({ pods: pods.length, revision }, "node graph listed");
    return revision;
  }

  protected async watch(revision: string, signal: AbortSignal): Promise<string> {
    const req = { resource: "pods", namespace: "", labelSelector: "", fieldSelector: "", resourceVersion: revision, timeoutSeconds: 0, allowBookmarks: true };
    for await (const ev of this.opts.handlers.watch(req, signal)) {
      if (ev.type === "ERROR") throw new ApiError(ev.status ?? failure(500, Reason.InternalError, "watch error"));
      if (ev.revision) revision = String(ev.revision);
      if (ev.object?.kind?.$case !== "pod") continue;
      if (ev.type === "ADDED" || ev.type === "MODIFIED") this.opts.graph.put(ev.object.kind.value);
      else if (ev.type === "DELETED") this.opts.graph.remove(ev.object.kind.value);
    }
    return revision;
  }
}
