import { Redis, type Result } from "ioredis";
import { ApiError, failure } from "@choreo/kit";
import { randomUUID } from "node:crypto";
import { CHANGES_KEY, FENCE_KEY, REV_KEY, allocationKey, indexKey, member, nodeLockKey, objectKey, objectKeyPrefix, secondaryIndexKey } from "./keys.js";
import {
  StoreError,
  storeBehind,
  type IndexEntry,
  type ListOptions,
  type ObjectStorage,
  type Page,
  type Pool,
  type RestoreOp,
  type Stored,
  type WriteOp,
} from "./object-storage.js";
import { GET_SCRIPT, LIST_SCRIPT, RESTORE_SCRIPT, WRITE_SCRIPT } from "./scripts.js";

export { StoreError };
export type { Page, Stored, WriteOp };

const RELEASE_LOCK = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

declare module "ioredis" {
  interface RedisCommander<Context> {
    choreoWrite(numKeys: number, ...args: (string | Buffer | number)[]): Result<number[], Context>;
    choreoListBuffer(numKeys: number, ...args: (string | number)[]): Result<(number | Buffer)[], Context>;
    choreoGetBuffer(numKeys: number, ...args: string[]): Result<[Buffer | null, Buffer | null, Buffer], Context>;
    choreoRestore(numKeys: number, ...args: (string | Buffer | number)[]): Result<number, Context>;
    choreoReleaseLock(key: string, token: string): Result<number, Context>;
  }
}

/** The most writes one Lua call applies (Redis runs nothing else meanwhile). */
const MAX_BATCH = 256;

interface Queued {
  keys: string[];
  args: (string | Buffer)[];
  resolve(answer: [number, number]): void;
  reject(err: unknown): void;
}

export interface RedisStoreOptions {
  /**
   * The event log's last sequence as this replica knows it (its watch
   * cache's, the startup check's): reads and writes of a store whose
   * revision is below it answer 503 and call `onBehind` (a lost tail).
   */
  floor?: () => number;
  onBehind?: (storeRevision: number, logRevision: number) => void;
  /**
   * Write durability "replica": each batch is answered once this many
   * replicas acknowledged it (WAIT), or after {@link WAIT_TIMEOUT_MS} with
   * `onUnreplicated` told how many did.
   */
  waitReplicas?: number;
  onUnreplicated?: (acknowledged: number) => void;
  /** Write durability "log": a write is answered once this resolves for its revision (LogWatermark.reached). */
  durable?: (revision: number, written: Uint8Array) => Promise<void>;
}

/** How long a batch waits for its replicas (durability "replica"). */
const WAIT_TIMEOUT_MS = 1_000;

/**
 * Redis refusing or away: 503, so clients retry — a primary without its
 * replicas (min-replicas-to-write: NOREPLICAS), a replica during a failover
 * (READONLY), a connection lost mid-request. Anything else as it is.
 */
function unavailable(err: unknown): unknown {
  const msg = err instanceof Error ? err.message : String(err);
  if (!/^(NOREPLICAS|READONLY|LOADING|MASTERDOWN)\b|Connection is closed|Reached the max retries|Stream isn't writeable|ECONNREFUSED|ECONNRESET/.test(msg))
    return err;
  return new ApiError(failure(503, "ServiceUnavailable", `the store is unavailable: ${msg.split("\n")[0]}`, { retryAfterSeconds: 1 }));
}

/**
 * The object storage on Redis: with the relay, the only code that touches
 * Redis, every key from keys.ts. Every operation is one round trip: writes
 * are one Lua compare-and-set that also appends the change record; lists are
 * one Lua read consistent at the revision it returns. Writes arriving in one
 * turn of the event loop go to Redis together, in one Lua call per
 * {@link MAX_BATCH}: each still gets its own revision and its own answer.
 */
export class RedisStore implements ObjectStorage {
  private queue: Queued[] = [];

  constructor(
    readonly redis: Redis,
    private readonly opts: RedisStoreOptions = {},
  ) {
    redis.defineCommand("choreoWrite", { lua: WRITE_SCRIPT });
    redis.defineCommand("choreoList", { lua: LIST_SCRIPT });
    redis.defineCommand("choreoGet", { lua: GET_SCRIPT });
    redis.defineCommand("choreoRestore", { lua: RESTORE_SCRIPT });
    // A defined command goes as EVALSHA once loaded, where EVAL sent (and Redis hashed) the script with every bind.
    redis.defineCommand("choreoReleaseLock", { numberOfKeys: 1, lua: RELEASE_LOCK });
  }

  /** Throws the 503 of a store behind the log when `storeRevision` is below the floor. */
  /**
   * `floor` must be taken before the read was sent: the log (and so the
   * watch cache behind the floor) may pass the revision the read saw while
   * its answer travels back — a current store taken for one behind (a 503
   * in CI with two replicas: store 89, log 90).
   */
  private checkFloor(storeRevision: number, floor: number): void {
    if (storeRevision >= floor) return;
    this.opts.onBehind?.(storeRevision, floor);
    throw storeBehind(storeRevision, floor);
  }

  async currentRevision(): Promise<number> {
    return Number((await this.redis.get(REV_KEY)) ?? 0);
  }

  async get(resource: string, namespace: string, name: string, opts: { unfenced?: boolean } = {}): Promise<Stored | undefined> {
    const floor = this.opts.floor?.() ?? 0;
    const [v, r, rev] = await this.redis.choreoGetBuffer(2, objectKey(resource, namespace, name), REV_KEY).catch((err: unknown) => {
      throw unavailable(err);
    });
    if (!opts.unfenced) this.checkFloor(Number(rev.toString()), floor);
    if (!v || !r) return undefined;
    return { bytes: v, revision: Number(r.toString()) };
  }

  async write(op: WriteOp): Promise<number> {
    const add = (op.indexAdd ?? []).map((e) => secondaryIndexKey(op.resource, e.index, e.value));
    const remove = (op.indexRemove ?? []).map((e) => secondaryIndexKey(op.resource, e.index, e.value));
    const keys = [objectKey(op.resource, op.namespace, op.name), indexKey(op.resource), ...add, ...remove];
    const args = [
      String(add.length + remove.length),
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
    const [rev, current] = await new Promise<[number, number]>((resolve, reject) => {
      if (this.queue.push({ keys, args, resolve, reject }) === 1) setImmediate(() => this.flush());
    });
    if (rev === -1) throw new StoreError("exists", current);
    if (rev === -2) throw new StoreError("not-found", current);
    if (rev === -3) throw new StoreError("conflict", current);
    if (rev === -4) {
      const floor = Math.max(this.opts.floor?.() ?? 0, current + 1);
      this.opts.onBehind?.(current, floor);
      throw storeBehind(current, floor);
    }
    await this.opts.durable?.(rev, op.event);
    return rev;
  }

  /** Sends the queued writes, in arrival order (which is their revision order). */
  private flush(): void {
    const queued = this.queue;
    this.queue = [];
    for (let i = 0; i < queued.length; i += MAX_BATCH) {
      const batch = queued.slice(i, i + MAX_BATCH);
      const keys = [REV_KEY, CHANGES_KEY, FENCE_KEY, ...batch.flatMap((q) => q.keys)];
      const floor = String(this.opts.floor?.() ?? 0);
      const wait = this.opts.waitReplicas ?? 0;
      this.redis
        .choreoWrite(keys.length, ...keys, floor, ...batch.flatMap((q) => q.args))
        .then(async (out) => {
          // WAIT covers every write this connection sent before it: the batch and anything pipelined earlier.
          if (wait > 0) {
            const acknowledged = await this.redis.wait(wait, WAIT_TIMEOUT_MS);
            if (acknowledged < wait) this.opts.onUnreplicated?.(acknowledged);
          }
          return out;
        })
        .then(
          (out) => batch.forEach((q, j) => q.resolve([Number(out[2 * j]), Number(out[2 * j + 1])])),
          (err: unknown) => batch.forEach((q) => q.reject(unavailable(err))),
        );
    }
  }

  async list(resource: string, opts: ListOptions = {}): Promise<Page> {
    const floor = this.opts.floor?.() ?? 0;
    const ns = opts.namespace ?? "";
    let min = ns ? `[${ns}/` : "-";
    const max = ns ? `(${ns}0` : "+"; // "0" sorts right after "/"
    if (opts.after && (!ns || opts.after > min.slice(1))) min = `(${opts.after}`;
    const limit = opts.limit ?? 0;
    const raw = await this.redis
      .choreoListBuffer(
        2,
        REV_KEY,
        opts.index ? secondaryIndexKey(resource, opts.index.index, opts.index.value) : indexKey(resource),
        min,
        max,
        limit,
        objectKeyPrefix(resource),
      )
      .catch((err: unknown) => {
        throw unavailable(err);
      });
    const revision = Number(raw[0]);
    this.checkFloor(revision, floor);
    const items: Stored[] = [];
    let last: string | undefined;
    for (let i = 1; i + 2 < raw.length; i += 3) {
      last = String(raw[i]);
      items.push({ bytes: raw[i + 1] as Buffer, revision: Number(String(raw[i + 2])) });
    }
    const next = limit > 0 && items.length === limit ? last : undefined;
    return { revision, items, next };
  }

  async restore(op: RestoreOp): Promise<boolean> {
    const add = (op.indexAdd ?? []).map((e) => secondaryIndexKey(op.resource, e.index, e.value));
    const remove = (op.indexRemove ?? []).map((e) => secondaryIndexKey(op.resource, e.index, e.value));
    const keys = [REV_KEY, objectKey(op.resource, op.namespace, op.name), indexKey(op.resource), ...add, ...remove];
    const args = [
      String(op.revision),
      op.mode,
      member(op.namespace, op.name),
      op.object ? toBuffer(op.object) : "",
      ...add.map(() => "+"),
      ...remove.map(() => "-"),
    ];
    return (await this.redis.choreoRestore(keys.length, ...keys, ...args)) === 1;
  }

  async indexMembers(resource: string, index: IndexEntry): Promise<string[]> {
    return this.redis.zrangebylex(secondaryIndexKey(resource, index.index, index.value), "-", "+");
  }

  /** A `SET NX PX` lock with a token, polled every 5 ms for up to 2 s. */
  async withNodeLock<T>(node: string, fn: () => Promise<T>): Promise<{ value: T } | undefined> {
    const key = nodeLockKey(node);
    const token = randomUUID();
    for (let i = 0; ; i++) {
      if (await this.redis.set(key, token, "PX", 5_000, "NX")) break;
      if (i >= 400) return undefined;
      await new Promise((r) => setTimeout(r, 5));
    }
    try {
      return { value: await fn() };
    } finally {
      await this.redis.choreoReleaseLock(key, token);
    }
  }

  /** `SET NX` on the item's key, so that api replicas never hand out one item twice. */
  async claim(pool: Pool, item: string, owner: string): Promise<boolean> {
    const key = allocationKey(pool, item);
    if (await this.redis.set(key, owner, "NX")) return true;
    return (await this.redis.get(key)) === owner;
  }

  async release(pool: Pool, item: string, owner: string): Promise<void> {
    const key = allocationKey(pool, item);
    if ((await this.redis.get(key)) === owner) await this.redis.del(key);
  }
}

function toBuffer(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}
