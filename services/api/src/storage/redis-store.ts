import { Redis, type Result } from "ioredis";
import { CHANGES_KEY, REV_KEY, indexKey, member, objectKey } from "./keys.js";
import { LIST_SCRIPT, WRITE_SCRIPT } from "./scripts.js";

declare module "ioredis" {
  interface RedisCommander<Context> {
    choreoWrite(numKeys: number, ...args: (string | Buffer | Uint8Array | number)[]): Result<[number, number], Context>;
    choreoListBuffer(numKeys: number, ...args: (string | number)[]): Result<(number | Buffer)[], Context>;
  }
}

/** An object as stored: protobuf bytes (resourceVersion left empty) and its revision. */
export interface Stored {
  bytes: Buffer;
  revision: number;
}

/** One write on the revision line. */
export interface WriteOp {
  mode: "create" | "update" | "delete";
  resource: string;
  namespace: string;
  name: string;
  /** update/delete: refuse unless the stored revision is this one. */
  expectedRevision?: number;
  /** create/update: the object, encoded, without resourceVersion. */
  object?: Uint8Array;
  /** The change record: an encoded WatchEvent without revision. */
  event: Uint8Array;
  subject: string;
  /** Secondary index keys to add the object to / remove it from. */
  indexAdd?: string[];
  indexRemove?: string[];
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

/** A page of a list. `next` is the member to continue after. */
export interface Page {
  revision: number;
  items: Stored[];
  next?: string;
}

/**
 * The only code that touches Redis. Every operation is one round trip:
 * writes are one Lua compare-and-set that also appends the change record;
 * lists are one Lua read consistent at the revision it returns.
 */
export class RedisStore {
  constructor(readonly redis: Redis) {
    redis.defineCommand("choreoWrite", { lua: WRITE_SCRIPT });
    redis.defineCommand("choreoList", { lua: LIST_SCRIPT });
  }

  /** The revision of the last write. */
  async currentRevision(): Promise<number> {
    return Number((await this.redis.get(REV_KEY)) ?? 0);
  }

  async get(resource: string, namespace: string, name: string): Promise<Stored | undefined> {
    const [v, r] = await this.redis.hmgetBuffer(objectKey(resource, namespace, name), "v", "r");
    if (!v || !r) return undefined;
    return { bytes: v, revision: Number(r.toString()) };
  }

  /** Applies a write; returns its revision or throws StoreError. */
  async write(op: WriteOp): Promise<number> {
    const add = op.indexAdd ?? [];
    const remove = op.indexRemove ?? [];
    const keys = [REV_KEY, CHANGES_KEY, objectKey(op.resource, op.namespace, op.name), indexKey(op.resource), ...add, ...remove];
    const args = [
      op.mode,
      op.expectedRevision === undefined ? "" : String(op.expectedRevision),
      member(op.namespace, op.name),
      // ioredis sends Buffers as bytes but stringifies other typed arrays.
      op.object ? toBuffer(op.object) : "",
      toBuffer(op.event),
      op.subject,
      ...add.map(() => "+"),
      ...remove.map(() => "-"),
    ];
    const [rev, current] = await this.redis.choreoWrite(keys.length, ...keys, ...args);
    if (rev === -1) throw new StoreError("exists", current);
    if (rev === -2) throw new StoreError("not-found", current);
    if (rev === -3) throw new StoreError("conflict", current);
    return rev;
  }

  /**
   * A page of objects of a resource, in (namespace, name) order, consistent
   * at the returned revision. `index` selects a secondary index key instead
   * of the resource's primary one; `namespace` narrows to one namespace.
   */
  async list(resource: string, opts: { namespace?: string; index?: string; limit?: number; after?: string } = {}): Promise<Page> {
    const ns = opts.namespace ?? "";
    let min = ns ? `[${ns}/` : "-";
    const max = ns ? `(${ns}0` : "+"; // "0" sorts right after "/"
    if (opts.after && (!ns || opts.after > min.slice(1))) min = `(${opts.after}`;
    const limit = opts.limit ?? 0;
    const raw = await this.redis.choreoListBuffer(2, REV_KEY, opts.index ?? indexKey(resource), min, max, limit, `{choreo}:o:${resource}:`);
    const revision = Number(raw[0]);
    const items: Stored[] = [];
    let last: string | undefined;
    for (let i = 1; i + 2 < raw.length; i += 3) {
      last = String(raw[i]);
      items.push({ bytes: raw[i + 1] as Buffer, revision: Number(String(raw[i + 2])) });
    }
    const next = limit > 0 && items.length === limit ? last : undefined;
    return { revision, items, next };
  }

  /** The members of a secondary index (e.g. the pods on a node). */
  async indexMembers(key: string): Promise<string[]> {
    return this.redis.zrangebylex(key, "-", "+");
  }
}

function toBuffer(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}
