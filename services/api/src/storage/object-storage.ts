/**
 * The storage seam: everything the registry keeps outside its process. Two
 * implementations: RedisStore (the api's, owner of every Redis key) and
 * MemoryStore (hermetic tests), with the same semantics:
 *
 *   - one revision line: every write takes the next revision and records its
 *     change (the relay publishes those records in order);
 *   - compare-and-set: an update or delete names the revision it read;
 *   - lists consistent at the revision they return;
 *   - a short per-node lock (binds check capacity one at a time);
 *   - allocations: a ClusterIP or node port held by one owner at a time;
 *   - restore: a change the event log holds put back at its revision, after
 *     the store lost its tail (recovery.ts).
 */
import { ApiError, failure } from "@choreo/kit";

export interface ObjectStorage extends Allocations {
  /** The revision of the last write. */
  currentRevision(): Promise<number>;
  /** One object; `unfenced`: read even while the store is behind the event log (the repair's own reads). */
  get(resource: string, namespace: string, name: string, opts?: { unfenced?: boolean }): Promise<Stored | undefined>;
  /** Applies a write; returns its revision or throws StoreError. */
  write(op: WriteOp): Promise<number>;
  /**
   * A page of objects of a resource, in (namespace, name) order, consistent
   * at the returned revision. `index` reads a secondary index instead of the
   * resource's primary one; `namespace` narrows to one namespace.
   */
  list(resource: string, opts?: ListOptions): Promise<Page>;
  /** The members (`<ns>/<name>`) of a secondary index, e.g. the pods on a node. */
  indexMembers(resource: string, index: IndexEntry): Promise<string[]>;
  /**
   * Runs `fn` holding a short lock on a node, across api replicas.
   * Undefined when the lock stayed busy.
   */
  withNodeLock<T>(node: string, fn: () => Promise<T>): Promise<{ value: T } | undefined>;
  /**
   * Puts back a change the event log holds (a repair after a lost tail):
   * applied unless the object is already at that revision or later; the
   * revision line moves up to it. True when applied.
   */
  restore(op: RestoreOp): Promise<boolean>;
}

/** What can be allocated: Service ClusterIPs and node ports. */
export type Pool = "cluster-ip" | "node-port" | "pod-cidr";

/** Unique items (an address, a port) held by one owner at a time. */
export interface Allocations {
  /** Takes `item` for `owner` (namespace/name); false when someone else holds it. */
  claim(pool: Pool, item: string, owner: string): Promise<boolean>;
  /** Gives `item` back if `owner` holds it. */
  release(pool: Pool, item: string, owner: string): Promise<void>;
}

/** An object as stored: protobuf bytes (resourceVersion left empty) and its revision. */
export interface Stored {
  bytes: Buffer;
  revision: number;
}

/** A secondary index entry of a resource: `{ index: "node", value: "n1" }`. */
export interface IndexEntry {
  index: string;
  value: string;
}

/** One write on the revision line. */
export interface WriteOp {
  mode: "create" | "update" | "delete";
  resource: string;
  namespace: string;
  name: string;
  /** update/delete: refuse unless the stored revision is this one. */
  expectedRevision?: number | undefined;
  /** create/update: the object, encoded, without resourceVersion. */
  object?: Uint8Array | undefined;
  /** The change record: an encoded WatchEvent without revision. */
  event: Uint8Array;
  subject: string;
  /** Secondary index entries to add the object to / remove it from. */
  indexAdd?: IndexEntry[];
  indexRemove?: IndexEntry[];
}

/** Options of ObjectStorage.list. */
export interface ListOptions {
  namespace?: string | undefined;
  index?: IndexEntry | undefined;
  limit?: number | undefined;
  /** The member to continue after. */
  after?: string | undefined;
}

/** A page of a list. `next` is the member to continue after. */
export interface Page {
  revision: number;
  items: Stored[];
  next?: string | undefined;
}

/**
 * A change the event log holds that the store lost, put back by a repair
 * (recovery.ts): the object at `revision`, or its removal.
 */
export interface RestoreOp {
  mode: "put" | "delete";
  resource: string;
  namespace: string;
  name: string;
  revision: number;
  /** put: the object, encoded, without resourceVersion. */
  object?: Uint8Array | undefined;
  indexAdd?: IndexEntry[];
  indexRemove?: IndexEntry[];
}

/** Why a write did not happen. */
export class StoreError extends Error {
  override name = "StoreError";
  constructor(
    readonly code: "exists" | "not-found" | "conflict",
    readonly currentRevision: number,
  ) {
    super(code);
  }
}

/**
 * The answer while the store is behind the event log (Redis lost its tail):
 * 503 with a retry hint, nothing read or written, until the repair put the
 * missing revisions back (recovery.ts).
 */
export function storeBehind(storeRevision: number, logRevision: number): ApiError {
  return new ApiError(
    failure(
      503,
      "ServiceUnavailable",
      `the store is behind the event log (revision ${storeRevision}, the log holds ${logRevision}): the lost revisions are being restored from the log; try again`,
      { retryAfterSeconds: 1 },
    ),
  );
}

/** `<ns>/<name>`, `/<name>` for cluster-scoped objects: the order of lists and continue tokens. */
export function member(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}
