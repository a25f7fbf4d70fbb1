import { kindByCase, notFound, type AnyObject, type KindInfo } from "@choreo/kit";
import type {
  BindRequest,
  CreateRequest,
  DeleteCollectionRequest,
  DeleteRequest,
  EvictRequest,
  GetRequest,
  GetScaleRequest,
  ListRequest,
  Object as ApiObject,
  ObjectList,
  PatchRequest,
  UpdateRequest,
  UpdateScaleRequest,
  WatchEvent,
  WatchRequest,
} from "@choreo/kit/gen/choreo/api/v1/api";
import type { Scale } from "@choreo/kit/gen/choreo/autoscaling/v1/autoscaling";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import { patchObject } from "./generic/patch.js";
import { withManager } from "./generic/managed-fields-store.js";
import type { GenericStore } from "./generic/store.js";
import { watchObjects, type WatchSource } from "./generic/watch.js";
import { purgeNamespace } from "./namespaces/purge.js";
import { bindPod } from "./pods/binding.js";
import { evictPod } from "./pods/eviction.js";
import { EPHEMERAL_CONTAINERS, throughEphemeralContainers } from "./pods/ephemeral-containers.js";
import { getScale, updateScale } from "./workloads/scale.js";
import { withDryRun } from "./generic/dry-run.js";

/**
 * The api's verbs: the one implementation of ApiHandlers, served by every
 * transport. Shared verbs go to the generic store (whose per-kind
 * strategies add defaults, validation and deletion hooks); subresources go
 * to the kind that has them (pods/binding, workloads/scale).
 */
export class Registry implements ApiHandlers {
  private source?: WatchSource;

  constructor(readonly store: GenericStore) {}

  /** Connects the watch path (after the watch cache is running). */
  attachWatch(source: WatchSource): void {
    this.source = source;
  }

  get(req: GetRequest): Promise<ApiObject> {
    return this.store.get(req);
  }

  list(req: ListRequest): Promise<ObjectList> {
    return this.store.list(req);
  }

  watch(req: WatchRequest, signal: AbortSignal): AsyncGenerator<WatchEvent> {
    return watchObjects(this.store, this.source, req, signal);
  }

  create(req: CreateRequest): Promise<ApiObject> {
    return withDryRun(req.dryRun, () => withManager(req.fieldManager, kindOfRequest(req), "", () => this.store.create(req)));
  }

  update(req: UpdateRequest): Promise<ApiObject> {
    if (req.subresource === EPHEMERAL_CONTAINERS) return this.updateEphemeralContainers(req);
    if (req.subresource && req.subresource !== "status") throw notFound(`${kindOfRequest(req)}/${req.subresource}`, "");
    return withDryRun(req.dryRun, () => withManager(req.fieldManager, kindOfRequest(req), "", () => this.store.update(req)));
  }

  updateStatus(req: UpdateRequest): Promise<ApiObject> {
    return withDryRun(req.dryRun, () => withManager(req.fieldManager, kindOfRequest(req), "status", () => this.store.updateStatus(req)));
  }

  patch(req: PatchRequest): Promise<ApiObject> {
    if (req.subresource === EPHEMERAL_CONTAINERS) {
      if (req.resource !== "pods") throw notFound(`${req.resource}/${req.subresource}`, req.name);
      // The pod strategy takes only spec.ephemeralContainers from the patched pod (pods/ephemeral-containers.ts).
      return withDryRun(req.dryRun, () => throughEphemeralContainers(() => patchObject(this.store, req)));
    }
    return withDryRun(req.dryRun, () => patchObject(this.store, req));
  }

  /** PUT pods/NAME/ephemeralcontainers: the pod's spec.ephemeralContainers replaced, nothing else. */
  private updateEphemeralContainers(req: UpdateRequest): Promise<ApiObject> {
    if (req.object?.kind?.$case !== "pod") throw notFound(`${kindOfRequest(req)}/${req.subresource}`, "");
    // Its status is the stored one whatever the body says (the strategy keeps only the ephemeral containers).
    const object = { ...req.object, kind: { $case: "pod" as const, value: { ...req.object.kind.value, status: undefined } } };
    return withDryRun(req.dryRun, () =>
      withManager(req.fieldManager, "pods", EPHEMERAL_CONTAINERS, () => throughEphemeralContainers(() => this.store.update({ ...req, object }))),
    );
  }

  delete(req: DeleteRequest): Promise<ApiObject> {
    return withDryRun(req.options?.dryRun.includes("All"), () => this.store.delete(req));
  }

  deleteCollection(req: DeleteCollectionRequest): Promise<ObjectList> {
    return withDryRun(req.options?.dryRun.includes("All"), () => this.store.deleteCollection(req));
  }

  bind(req: BindRequest): Promise<ApiObject> {
    return bindPod(this.store, req);
  }

  evict(req: EvictRequest): Promise<ApiObject> {
    return withDryRun(req.eviction?.deleteOptions?.dryRun.includes("All"), () => evictPod(this.store, req));
  }

  getScale(req: GetScaleRequest): Promise<Scale> {
    return getScale(this.store, req);
  }

  updateScale(req: UpdateScaleRequest): Promise<Scale> {
    return withManager(req.fieldManager, req.resource, "scale", () => updateScale(this.store, req));
  }

  /** Creates with fresh metadata, skipping the request decoding (bootstrap). */
  createObject(info: KindInfo, v: AnyObject): Promise<AnyObject> {
    return this.store.createObject(info, v);
  }

  /** Reads a list page of one kind (bootstrap). */
  page(info: KindInfo, opts: { namespace: string; limit: number }): Promise<{ revision: number; items: AnyObject[]; next?: string | undefined }> {
    return this.store.page(info, opts);
  }

  /** Deletes everything in a terminating namespace, then the namespace. */
  purgeNamespace(name: string): Promise<void> {
    return purgeNamespace(this.store, name);
  }
}

/** The resource a create or update writes ("" when the request has no object: the store refuses it). */
function kindOfRequest(req: CreateRequest | UpdateRequest): string {
  return req.object?.kind ? kindByCase(req.object.kind.$case).resource : "";
}
