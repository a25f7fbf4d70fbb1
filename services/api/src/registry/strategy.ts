import type { AnyObject, KindInfo, StatusCause } from "@choreo/kit";

/** What a kind adds to the generic registry: defaults, validation, indexes. */
export interface Strategy<T extends AnyObject = AnyObject> {
  /** Fills defaults of a new object (after metadata is set). */
  prepareCreate?(obj: T): void | Promise<void>;
  /** Carries over what an update may not change, fills defaults. */
  prepareUpdate?(obj: T, old: T): void;
  /** Field errors of an object (create, or update when `old` is given). */
  validate(obj: T, old?: T): StatusCause[];
  /** Secondary index values, e.g. `{ node: "n1" }` for pods. */
  indexes?(obj: T): Record<string, string>;
  /** The node in the event subject (pods). */
  node?(obj: T): string;
  /** Called after the object is gone (release a ClusterIP). */
  afterDelete?(obj: T): Promise<void>;
  /** Called when a create failed after prepareCreate (release what it took). */
  abortCreate?(obj: T): Promise<void>;
}

/** A strategy looked up per kind. */
export type Strategies = Partial<Record<KindInfo["case"], Strategy>>;
