// Test doubles shared by this service's unit tests: an informer stand-in and
// an api client that records what it was asked to do.
import { keyOf, notFound, unwrap, type ApiObject } from "@choreo/kit";
import { FakeInformer } from "@choreo/kit/testing";
import type { ListOptions, PatchType } from "@choreo/kit/client";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod, ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import type { DeleteOptions } from "@choreo/kit/gen/choreo/meta/v1/meta";

/** An informer stand-in (the kit's). */
export { FakeInformer as FakeCache } from "@choreo/kit/testing";

/**
 * The kit's stand-in with indexes kept as the informer keeps them (on put and
 * remove), so `byIndex` hands out only the objects of that index value and
 * reads no other object: what a test counting the objects a sync looks at needs.
 */
export class IndexedFakeCache<T extends { metadata?: { namespace: string; name: string } | undefined }> extends FakeInformer<T> {
  private readonly fns = new Map<string, (o: T) => string[]>();
  private readonly idx = new Map<string, Map<string, Set<string>>>();

  override addIndexer(name: string, fn: (o: T) => string[]): void {
    super.addIndexer(name, fn);
    this.fns.set(name, fn);
    const idx = new Map<string, Set<string>>();
    this.idx.set(name, idx);
    for (const [k, o] of this.items) for (const v of fn(o)) addTo(idx, v, k);
  }
  override byIndex(name: string, value: string): T[] {
    const out: T[] = [];
    for (const k of this.idx.get(name)?.get(value) ?? []) {
      const o = this.items.get(k);
      if (o !== undefined) out.push(o);
    }
    return out;
  }
  override put(o: T): void {
    const k = keyOf(o.metadata ?? { namespace: "", name: "" });
    this.unindex(k);
    // Indexed as stored: transformed, as the informer's indexers see it.
    const kept = this.transform(o);
    for (const [name, fn] of this.fns) for (const v of fn(kept)) addTo(this.idx.get(name) as Map<string, Set<string>>, v, k);
    super.put(o);
  }
  override remove(keyOrObject: string | T): void {
    this.unindex(typeof keyOrObject === "string" ? keyOrObject : keyOf(keyOrObject.metadata ?? { namespace: "", name: "" }));
    super.remove(keyOrObject);
  }
  private unindex(k: string): void {
    const old = this.items.get(k);
    if (old) for (const [name, fn] of this.fns) for (const v of fn(old)) this.idx.get(name)?.get(v)?.delete(k);
  }
}

function addTo(idx: Map<string, Set<string>>, value: string, key: string): void {
  let s = idx.get(value);
  if (!s) idx.set(value, (s = new Set()));
  s.add(key);
}

/** One call the fake client received. */
export type Action =
  | { verb: "create"; resource: string; object: ApiObject }
  | { verb: "delete"; resource: string; namespace: string; name: string; options?: Partial<DeleteOptions> | undefined }
  | { verb: "patch"; resource: string; namespace: string; name: string; patch: unknown; subresource?: string | undefined }
  | { verb: "updateStatus"; object: ApiObject }
  | { verb: "get"; resource: string; namespace: string; name: string };

/** An api client that records actions; `objects` answers gets; `fail` makes a verb throw. */
export class RecordingClient {
  readonly actions: Action[] = [];
  readonly objects = new Map<string, ApiObject>();
  fail: Partial<Record<Action["verb"], Error>> = {};
  private seq = 0;

  async create(object: ApiObject): Promise<ApiObject> {
    this.actions.push({ verb: "create", resource: "", object });
    if (this.fail.create) throw this.fail.create;
    const v = structuredClone(unwrap(object));
    if (v.metadata && !v.metadata.name) v.metadata.name = `${v.metadata.generateName}${(++this.seq).toString(36).padStart(5, "0")}`;
    if (v.metadata) v.metadata.uid ||= `uid-${v.metadata.name}`;
    return Promise.resolve({ kind: object.kind?.$case ? ({ $case: object.kind.$case, value: v } as ApiObject["kind"]) : undefined });
  }
  async delete(resource: string, namespace: string, name: string, options?: Partial<DeleteOptions>): Promise<ApiObject> {
    this.actions.push({ verb: "delete", resource, namespace, name, options });
    if (this.fail.delete) throw this.fail.delete;
    return Promise.resolve({ kind: undefined });
  }
  async patch(resource: string, namespace: string, name: string, _t: PatchType, patch: unknown, subresource = ""): Promise<ApiObject> {
    this.actions.push({ verb: "patch", resource, namespace, name, patch, subresource });
    if (this.fail.patch) throw this.fail.patch;
    return Promise.resolve({ kind: undefined });
  }
  async updateStatus(object: ApiObject): Promise<ApiObject> {
    this.actions.push({ verb: "updateStatus", object });
    if (this.fail.updateStatus) throw this.fail.updateStatus;
    return Promise.resolve(object);
  }
  async get(resource: string, namespace: string, name: string): Promise<ApiObject> {
    this.actions.push({ verb: "get", resource, namespace, name });
    const o = this.objects.get(`${resource}/${namespace}/${name}`);
    if (!o) throw notFound(resource, name);
    return Promise.resolve(o);
  }
  list(_r: string, _o?: ListOptions): never {
    throw new Error("not used");
  }
  of<V extends Action["verb"]>(verb: V): Extract<Action, { verb: V }>[] {
    return this.actions.filter((a): a is Extract<Action, { verb: V }> => a.verb === verb);
  }
}

/** An RC value (defaults as the api would set them). */
export function rc(name: string, replicas: number, labels: Record<string, string> = { app: "web" }, uid = `uid-${name}`): ReplicationController {
  const v = unwrap(
    fromKubeJson({
      apiVersion: "v1",
      kind: "ReplicationController",
      metadata: { name, namespace: "default", uid, generation: 1 },
      spec: { replicas, selector: labels, template: { metadata: { labels }, spec: { containers: [{ name: "app", image: "nginx" }] } } },
    }),
  ) as ReplicationController;
  return v;
}

/** Options of {@link pod}. */
export interface PodInit {
  labels?: Record<string, string>;
  owner?: { kind?: string; name: string; uid: string };
  node?: string;
  phase?: string;
  ready?: boolean;
  readySince?: string;
  deleting?: boolean;
  restarts?: number;
  created?: string;
}

/** A pod value with status. */
export function pod(name: string, o: PodInit = {}): Pod {
  return unwrap(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name,
        namespace: "default",
        uid: `uid-${name}`,
        resourceVersion: "7",
        labels: o.labels ?? { app: "web" },
        creationTimestamp: o.created ?? "2025-01-01T00:00:00Z",
        ...(o.owner
          ? {
              ownerReferences: [
                {
                  apiVersion: "v1",
                  kind: o.owner.kind ?? "ReplicationController",
                  name: o.owner.name,
                  uid: o.owner.uid,
                  controller: true,
                  blockOwnerDeletion: true,
                },
              ],
            }
          : {}),
        ...(o.deleting ? { deletionTimestamp: "2025-01-01T00:00:00Z" } : {}),
      },
      spec: { ...(o.node ? { nodeName: o.node } : {}), containers: [{ name: "app", image: "nginx" }] },
      status: {
        phase: o.phase ?? "Running",
        conditions: [{ type: "Ready", status: o.ready === false ? "False" : "True", lastTransitionTime: o.readySince ?? "2025-01-01T00:00:00Z" }],
        containerStatuses: [{ name: "app", ready: o.ready !== false, restartCount: o.restarts ?? 0, image: "nginx", imageID: "", containerID: "" }],
      },
    }),
  ) as Pod;
}
