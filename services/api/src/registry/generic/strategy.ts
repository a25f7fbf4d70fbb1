import type { AnyObject, KindInfo, StatusCause } from "@choreo/kit";
import type { NameRule } from "../shared/validation.js";
import type { RequestScope } from "./request-scope.js";
import type { Current, GenericStore } from "./store.js";

/**
 * What a kind adds to the generic store (Kubernetes' RESTCreateStrategy,
 * RESTUpdateStrategy, RESTGracefulDeleteStrategy in one): defaults,
 * validation, indexes, and hooks into deletion. Subresources (binding,
 * scale) live beside the strategy in the kind's folder.
 */
export interface Strategy<T extends AnyObject = AnyObject> {
  /** What a name must be (default: a DNS subdomain). */
  nameRule?: NameRule;
  /** Fills defaults of a new object (after metadata is set); mutating admission may look other objects up in `store`. */
  prepareCreate?(obj: T, store?: GenericStore): void | Promise<void>;
  /** Carries over what an update may not change, fills defaults (`scope`: the request's, e.g. the subresource it came through). */
  prepareUpdate?(obj: T, old: T, scope?: RequestScope): void;
  /** Field errors of an object (create, or update when `old` is given). */
  validate(obj: T, old?: T, scope?: RequestScope): StatusCause[];
  /**
   * Validating admission after validation, before the write (create, or an
   * update of spec and metadata when `old` is given; not status updates):
   * throws to refuse (Pod Security's 403), may add warnings to the request.
   */
  admit?(store: GenericStore, obj: T, old?: T): Promise<void>;
  /**
   * The form an object takes in storage and in the event log, and back
   * (Secrets: sealed, encrypted at rest). Absent: stored as it is.
   */
  toStorage?(obj: T): T;
  /** The object a stored form holds; throws an ApiError (500) when it cannot be opened. */
  fromStorage?(stored: T): T;
  /** Secondary index values, e.g. `{ node: "n1" }` for pods. */
  indexes?(obj: T): Record<string, string>;
  /** The node in the event subject (pods). */
  node?(obj: T): string;
  /** Seconds a deletion waits (graceful deletion); 0 or absent: at once. */
  gracePeriod?(obj: T, asked: number | undefined): number;
  /**
   * Whether an object being deleted stays after its last finalizer went
   * (a bound pod waits for its node agent to confirm).
   */
  waitsAfterFinalizers?(obj: T): boolean;
  /** Replaces the generic deletion (namespaces: mark terminating, purge). */
  delete?(store: GenericStore, info: KindInfo, current: Current): Promise<AnyObject>;
  /** Called after the object is gone (release a ClusterIP). */
  afterDelete?(obj: T): Promise<void>;
  /** Called when a create failed after prepareCreate (release what it took). */
  abortCreate?(obj: T): Promise<void>;
  /**
   * Called when a repair put the object back from the event log after the
   * store lost its tail (recovery.ts): take again what it holds outside its
   * object (a Service's ClusterIP and node ports). A removal put back calls
   * afterDelete.
   */
  restored?(obj: T): Promise<void>;
}

/** A strategy looked up per kind. */
export type Strategies = Partial<Record<KindInfo["case"], Strategy>>;
