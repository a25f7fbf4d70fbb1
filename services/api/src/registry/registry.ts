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
import { dryRunScope } from "./generic/dry-run.js";
import { managerScope } from "./generic/managed-fields-store.js";
import { NO_SCOPE, type RequestScope } from "./generic/request-scope.js";
import type { GenericStore } from "./generic/store.js";
import { watchObjects, type WatchSource } from "./generic/watch.js";
import { purgeNamespace } from "./namespaces/purge.js";
import { bindPod } from "./pods/binding.js";
import { evictPod } from "./pods/eviction.js";
import { EPHEMERAL_CONTAINERS, EPHEMERAL_CONTAINERS_SCOPE } from "./pods/ephemeral-containers.js";
import { getScale, updateScale } from "./workloads/scale.js";

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

  /** The store as the request sees it: the door's scope (`scope`: its admission context) with the request's own parts. */
  private as(scope: RequestScope, ...parts: RequestScope[]): GenericStore {
    let s = scope;
    for (const p of parts) if (Object.keys(p).length) s = { ...s, ...p };
    return s === NO_SCOPE ? this.store : this.store.withScope(s);
  }

  create(req: CreateRequest, scope: RequestScope = NO_SCOPE): Promise<ApiObject> {
    return this.as(scope, dryRunScope(req.dryRun), managerScope(req.fieldManager, kindOfRequest(req), "")).create(req);
  }

  update(req: UpdateRequest, scope: RequestScope = NO_SCOPE): Promise<ApiObject> {
    if (req.subresource === EPHEMERAL_CONTAINERS) return this.updateEphemeralContainers(req, scope);
    if (req.subresource && req.subresource !== "status") throw notFound(`${kindOfRequest(req)}/${req.subresource}`, "");
    return this.as(scope, dryRunScope(req.dryRun), managerScope(req.fieldManager, kindOfRequest(req), "")).update(req);
  }

  updateStatus(req: UpdateRequest, scope: RequestScope = NO_SCOPE): Promise<ApiObject> {
    return this.as(scope, dryRunScope(req.dryRun), managerScope(req.fieldManager, kindOfRequest(req), "status")).updateStatus(req);
  }

  patch(req: PatchRequest, scope: RequestScope = NO_SCOPE): Promise<ApiObject> {
    if (req.subresource === EPHEMERAL_CONTAINERS) {
      if (req.resource !== "pods") throw notFound(`${req.resource}/${req.subresource}`, req.name);
      // The pod strategy takes only spec.ephemeralContainers from the patched pod (pods/ephemeral-containers.ts).
      return patchObject(this.as(scope, dryRunScope(req.dryRun), EPHEMERAL_CONTAINERS_SCOPE), req);
    }
    return patchObject(this.as(scope, dryRunScope(req.dryRun)), req);
  }

  /** PUT pods/NAME/ephemeralcontainers: the pod's spec.ephemeralContainers replaced, nothing else. */
  private updateEphemeralContainers(req: UpdateRequest, scope: RequestScope): Promise<ApiObject> {
    if (req.object?.kind?.$case !== "pod") throw notFound(`${kindOfRequest(req)}/${req.subresource}`, "");
    // Its status is the stored one whatever the body says (the strategy keeps only the ephemeral containers).
    const object = { ...req.object, kind: { $case: "pod" as const, value: { ...req.object.kind.value, status: undefined } } };
    const store = this.as(scope, dryRunScope(req.dryRun), managerScope(req.fieldManager, "pods", EPHEMERAL_CONTAINERS), EPHEMERAL_CONTAINERS_SCOPE);
    return store.update({ ...req, object });
  }

  delete(req: DeleteRequest, scope: RequestScope = NO_SCOPE): Promise<ApiObject> {
    return this.as(scope, dryRunScope(req.options?.dryRun.includes("All"))).delete(req);
  }

  deleteCollection(req: DeleteCollectionRequest, scope: RequestScope = NO_SCOPE): Promise<ObjectList> {
    return this.as(scope, dryRunScope(req.options?.dryRun.includes("All"))).deleteCollection(req);
  }

  bind(req: BindRequest, scope: RequestScope = NO_SCOPE): Promise<ApiObject> {
    return bindPod(this.as(scope), req);
  }

  evict(req: EvictRequest, scope: RequestScope = NO_SCOPE): Promise<ApiObject> {
    return evictPod(this.as(scope, dryRunScope(req.eviction?.deleteOptions?.dryRun.includes("All"))), req);
  }

  getScale(req: GetScaleRequest): Promise<Scale> {
    return getScale(this.store, req);
  }

  updateScale(req: UpdateScaleRequest, scope: RequestScope = NO_SCOPE): Promise<Scale> {
    return updateScale(this.as(scope, managerScope(req.fieldManager, req.resource, "scale")), req);
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
