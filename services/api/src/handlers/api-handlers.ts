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
import type { RequestScope } from "../registry/generic/request-scope.js";

/**
 * The one handler set of the api service. The NATS, gRPC and HTTP transports
 * are thin translations onto it; a write's `scope` is what its door knows
 * of the request beyond it (the admission context: who asks, where warnings
 * go). Every method rejects with an `ApiError`
 * (from @choreo/kit) carrying a Kubernetes Status; nothing changes on error.
 */
export interface ApiHandlers {
  get(req: GetRequest): Promise<ApiObject>;
  /** A list consistent at `metadata.resourceVersion`, paged by limit/continue. */
  list(req: ListRequest): Promise<ObjectList>;
  /**
   * Changes after `resourceVersion` (or synthetic ADDED events for current
   * objects when it is "" or "0"), filtered by namespace and selectors, until
   * the signal aborts or `timeoutSeconds` pass. Rejects before the first
   * event with a 410 Expired ApiError when the revision is older than the
   * log keeps; a watcher that falls behind gets an ERROR event and the end.
   */
  watch(req: WatchRequest, signal: AbortSignal): AsyncIterable<WatchEvent>;
  create(req: CreateRequest, scope?: RequestScope): Promise<ApiObject>;
  /** Replaces spec and metadata; status changes here are refused (422). */
  update(req: UpdateRequest, scope?: RequestScope): Promise<ApiObject>;
  /** Replaces status only. */
  updateStatus(req: UpdateRequest, scope?: RequestScope): Promise<ApiObject>;
  patch(req: PatchRequest, scope?: RequestScope): Promise<ApiObject>;
  /**
   * Deletes, or starts a graceful deletion (a bound pod gets a
   * deletionTimestamp; an object with finalizers waits for them). Returns the
   * object as last stored.
   */
  delete(req: DeleteRequest, scope?: RequestScope): Promise<ApiObject>;
  deleteCollection(req: DeleteCollectionRequest, scope?: RequestScope): Promise<ObjectList>;
  /** Sets spec.nodeName of an unbound pod; 409 if it is bound already. */
  bind(req: BindRequest, scope?: RequestScope): Promise<ApiObject>;
  /**
   * Evicts a pod (pods/NAME/eviction): deleted with the eviction's
   * deleteOptions unless its PodDisruptionBudget has no disruption left
   * (429 TooManyRequests). Returns the pod as last stored.
   */
  evict(req: EvictRequest, scope?: RequestScope): Promise<ApiObject>;
  getScale(req: GetScaleRequest): Promise<Scale>;
  updateScale(req: UpdateScaleRequest, scope?: RequestScope): Promise<Scale>;
}

/**
 * Optional extra the HTTP gateway serves when given: `GET pods/NAME/log`
 * (the node agents answer it: services/node-agent/src/logs/README.md).
 */
export interface LogsHandler {
  logs(
    req: {
      namespace: string;
      name: string;
      container?: string;
      follow: boolean;
      tailLines?: number;
      sinceSeconds?: number;
      timestamps: boolean;
      previous: boolean;
    },
    signal: AbortSignal,
  ): AsyncIterable<string>;
}
