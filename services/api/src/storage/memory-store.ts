import {
  StoreError,
  member,
  type IndexEntry,
  type ListOptions,
  type ObjectStorage,
  type Page,
  type Pool,
  type RestoreOp,
  type Stored,
  type WriteOp,
} from "./object-storage.js";

/** A change record, as the Redis implementation appends it for the relay. */
export interface ChangeRecord {
  revision: number;
  subject: string;
  event: Uint8Array;
}

/**
 * The object storage in memory, for hermetic registry tests: the semantics
 * of RedisStore (one revision line, a change record per write, CAS by
 * revision, the per-node lock, allocations) without a server. Not shared
 * between processes: never the api's storage in production.
 */
export class MemoryStore implements ObjectStorage {
  private revision = 0;
  private readonly objects = new Map<string, Map<string, Stored>>();
  private readonly indexes = new Map<string, Set<string>>();
  private readonly locks = new Set<string>();
  private readonly allocations = new Map<string, string>();
  /** Every write's change record, in revision order. */
  readonly changes: ChangeRecord[] = [];

  currentRevision(): Promise<number> {
    return Promise.resolve(this.revision);
  }

  get(resource: string, namespace: string, name: string): Promise<Stored | undefined> {
    const s = this.objects.get(resource)?.get(member(namespace, name));
    return Promise.resolve(s && { bytes: Buffer.from(s.bytes), revision: s.revision });
  }

  write(op: WriteOp): Promise<number> {
    const objects = this.table(op.resource);
    const m = member(op.namespace, op.name);
    const cur = objects.get(m);
    if (op.mode === "create" && cur) return Promise.reject(new StoreError("exists", cur.revision));
    if (op.mode !== "create") {
      if (!cur) return Promise.reject(new StoreError("not-found", 0));
      if (op.expectedRevision !== undefined && op.expectedRevision !== cur.revision) return Promise.reject(new StoreError("conflict", cur.revision));
    }
    const rev = ++this.revision;
    if (op.mode === "delete") objects.delete(m);
    else objects.set(m, { bytes: Buffer.from(op.object ?? new Uint8Array()), revision: rev });
    for (const e of op.indexAdd ?? []) this.index(op.resource, e).add(m);
    for (const e of op.indexRemove ?? []) this.index(op.resource, e).delete(m);
    this.changes.push({ revision: rev, subject: op.subject, event: op.event });
    return Promise.resolve(rev);
  }

  restore(op: RestoreOp): Promise<boolean> {
    const objects = this.table(op.resource);
    const m = member(op.namespace, op.name);
    const applied = (objects.get(m)?.revision ?? 0) < op.revision;
    if (applied) {
      if (op.mode === "delete") objects.delete(m);
      else objects.set(m, { bytes: Buffer.from(op.object ?? new Uint8Array()), revision: op.revision });
      for (const e of op.indexAdd ?? []) this.index(op.resource, e).add(m);
      for (const e of op.indexRemove ?? []) this.index(op.resource, e).delete(m);
    }
    this.revision = Math.max(this.revision, op.revision);
    return Promise.resolve(applied);
  }

  list(resource: string, opts: ListOptions = {}): Promise<Page> {
    const objects = this.table(resource);
    const ns = opts.namespace ?? "";
    const members = opts.index ? [...this.index(resource, opts.index)] : [...objects.keys()];
    let chosen = members.filter((m) => (!ns || m.startsWith(`${ns}/`)) && (!opts.after || m > opts.after)).sort(byteOrder);
    const limit = opts.limit ?? 0;
    if (limit > 0) chosen = chosen.slice(0, limit);
    const items: Stored[] = [];
    let last: string | undefined;
    for (const m of chosen) {
      const s = objects.get(m);
      if (!s) continue;
      last = m;
      items.push({ bytes: Buffer.from(s.bytes), revision: s.revision });
    }
    const next = limit > 0 && items.length === limit ? last : undefined;
    return Promise.resolve({ revision: this.revision, items, next });
  }

  indexMembers(resource: string, index: IndexEntry): Promise<string[]> {
    return Promise.resolve([...this.index(resource, index)].sort(byteOrder));
  }

  /** Polled like the Redis lock: every 5 ms for up to 2 s. */
  async withNodeLock<T>(node: string, fn: () => Promise<T>): Promise<{ value: T } | undefined> {
    for (let i = 0; this.locks.has(node); i++) {
      if (i >= 400) return undefined;
      await new Promise((r) => setTimeout(r, 5));
    }
    this.locks.add(node);
    try {
      return { value: await fn() };
    } finally {
      this.locks.delete(node);
    }
  }

  claim(pool: Pool, item: string, owner: string): Promise<boolean> {
    const key = `${pool}:${item}`;
    const holder = this.allocations.get(key);
    if (holder === undefined) this.allocations.set(key, owner);
    return Promise.resolve(holder === undefined || holder === owner);
  }

  release(pool: Pool, item: string, owner: string): Promise<void> {
    const key = `${pool}:${item}`;
    if (this.allocations.get(key) === owner) this.allocations.delete(key);
    return Promise.resolve();
  }

  private table(resource: string): Map<string, Stored> {
    let t = this.objects.get(resource);
    if (!t) this.objects.set(resource, (t = new Map()));
    return t;
  }

  private index(resource: string, e: IndexEntry): Set<string> {
    const key = `${resource}:${e.index}:${e.value}`;
    let s = this.indexes.get(key);
    if (!s) this.indexes.set(key, (s = new Set()));
    return s;
  }
}

/** Redis' lex order: bytes, not UTF-16 code units. */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
