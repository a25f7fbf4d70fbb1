import { KINDS, kindOf, selectableFields } from "@choreo/kit";
import { Object as ObjectMsg } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Logger } from "@choreo/kit/log";
import { Counter, Gauge, type Registry } from "prom-client";
import { orAbort, sleep } from "@choreo/kit/lifecycle";
import { member, type ObjectStorage, type Page, type Stored } from "./object-storage.js";
import type { CachedEvent, WatchCache } from "./watch-cache.js";
import { callSignal } from "../handlers/call-signal.js";

/**
 * One version of an object: its stored bytes (undefined: deleted at
 * `revision`), what selection reads, and the version before it while a
 * snapshot may still need it.
 */
interface Version {
  readonly revision: number;
  readonly bytes: Buffer | undefined;
  readonly labels: Readonly<Record<string, string>>;
  readonly fields: Readonly<Record<string, string>>;
  prev: Version | undefined;
}

/** The objects of one resource. */
interface Table {
  /** `<ns>/<name>` → newest version (a deleted one stays while its history is kept). */
  readonly entries: Map<string, Version>;
  /** The members in byte order, but for `added` (merged when a list needs the order). */
  sorted: string[];
  added: string[];
  /** Members with history (an older version or a deletion) for compaction to look at. */
  readonly history: Set<string>;
  /** The revision of the store's list this table started from: changes up to it are in. */
  listedAt: number;
}

/** Options of the object cache. */
export interface ObjectCacheOptions {
  storage: ObjectStorage;
  watch: WatchCache;
  log: Logger;
  /** How long versions replaced or deleted stay readable by snapshots (continue tokens, Exact): 60 s. */
  historyMs?: number;
  /** How often the history is compacted: 5 s. */
  compactEveryMs?: number;
  /** Where its metrics go (the api's /metrics): its revision, objects, and reads by verb and by who answered. */
  registry?: Registry;
}

/** What a list from the cache selects, on what selection reads (labels, fields): nothing is decoded to decide. */
export type CachePredicate = (labels: Readonly<Record<string, string>>, fields: Readonly<Record<string, string>>) => boolean;

/**
 * Every object's current state at one revision (Kubernetes' cacher and
 * watchCache store): built from one store list of each resource, then kept
 * by the watch cache's changes (stream sequence == revision), so it is the
 * store's state at `revision` and never a state in between. It keeps the
 * stored bytes, not decoded objects; one per api replica, shared by every
 * request. Replaced and deleted versions stay `historyMs`, so a paged list
 * continues at the revision it started at.
 */
export class ObjectCache {
  readonly name = "object-cache";
  private tables = new Map<string, Table>();
  private rev = -1;
  /** Snapshots below this revision are no longer complete. */
  private compacted = Number.MAX_SAFE_INTEGER;
  private waiters: { rev: number; resolve: (ok: boolean) => void }[] = [];
  private marks: { at: number; rev: number }[] = [];
  private readonly historyMs: number;
  private readonly compactEveryMs: number;
  private readonly reads: Counter<"verb" | "source"> | undefined;

  constructor(private readonly opts: ObjectCacheOptions) {
    this.historyMs = opts.historyMs ?? 60_000;
    this.compactEveryMs = opts.compactEveryMs ?? 5_000;
    if (!opts.registry) return;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the gauges' collect callbacks read the cache (their own `this` is the gauge)
    const cache = this;
    new Gauge({
      name: "choreo_api_object_cache_revision",
      help: "The revision whose state the object cache holds (-1 while it builds).",
      registers: [opts.registry],
      collect() {
        this.set(cache.revision);
      },
    });
    new Gauge({
      name: "choreo_api_object_cache_objects",
      help: "Objects the object cache holds.",
      registers: [opts.registry],
      collect() {
        this.set(cache.size);
      },
    });
    this.reads = new Counter({
      name: "choreo_api_object_cache_reads_total",
      help: "Reads that may be served from the object cache (a resourceVersion, a continued page of its list, a consistent list when enabled) by verb and by who answered (cache, store).",
      labelNames: ["verb", "source"],
      registers: [opts.registry],
    });
  }

  /** Counts a read that could be served from the cache: by it, or by the store. */
  countRead(verb: "get" | "list", source: "cache" | "store"): void {
    this.reads?.inc({ verb, source });
  }

  /** The revision whose state the cache holds; -1 while it is (re)building. */
  get revision(): number {
    return this.rev;
  }

  /** The oldest revision a snapshot (continue, Exact) can still be read at. */
  get compactedRevision(): number {
    return this.compacted;
  }

  /** How many objects (not deleted) the cache holds. */
  get size(): number {
    let n = 0;
    for (const t of this.tables.values()) for (const v of t.entries.values()) if (v.bytes) n++;
    return n;
  }

  async start(signal: AbortSignal): Promise<void> {
    const compactor = setInterval(() => this.compactTick(), this.compactEveryMs);
    compactor.unref();
    try {
      while (!signal.aborted) {
        try {
          await this.follow(signal);
        } catch (err) {
          if (signal.aborted) break;
          this.opts.log.error({ err }, "object cache failed; rebuilding");
          await sleep(500, signal);
        }
      }
    } finally {
      clearInterval(compactor);
      this.setRevision(-1);
    }
  }

  /** Lists every resource from the store, then applies the watch cache's changes after each list. */
  private async follow(signal: AbortSignal): Promise<void> {
    this.setRevision(-1);
    // The watch cache stopped (the api failed at start) is never ready: the stop must not wait on it.
    await orAbort(this.opts.watch.ready, signal);
    if (signal.aborted) return;
    const tables = new Map<string, Table>();
    for (const info of KINDS) {
      if (tables.has(info.resource)) continue;
      const page = await this.opts.storage.list(info.resource);
      const t: Table = { entries: new Map(), sorted: [], added: [], history: new Set(), listedAt: page.revision };
      for (const s of page.items) {
        const o = ObjectMsg.decode(s.bytes);
        if (!o.kind) continue;
        const v = o.kind.value;
        const m = member(v.metadata?.namespace ?? "", v.metadata?.name ?? "");
        t.entries.set(m, {
          revision: s.revision,
          bytes: Buffer.from(s.bytes),
          labels: v.metadata?.labels ?? {},
          fields: selectableFields(kindOf(o), v),
          prev: undefined,
        });
        t.sorted.push(m);
      }
      t.sorted.sort(byteOrder);
      tables.set(info.resource, t);
    }
    const lists = [...tables.values()].map((t) => t.listedAt);
    const from = Math.min(...lists);
    const consistentAt = Math.max(...lists);
    this.tables = tables;
    this.compacted = consistentAt;
    this.marks = [];
    this.opts.log.info({ from, consistentAt, objects: this.size }, "object cache listed");
    if (from >= consistentAt) this.setRevision(from);
    const changes = this.opts.watch.since(from, signal);
    for (;;) {
      const n = await changes.next();
      if (n.done) {
        if (n.value === "expired") this.opts.log.warn({ revision: this.rev }, "object cache fell behind the watch cache; relisting");
        return;
      }
      this.apply(n.value);
      if (n.value.revision >= consistentAt) this.setRevision(n.value.revision);
    }
  }

  private apply(c: CachedEvent): void {
    const t = this.tables.get(c.resource);
    if (!t || c.revision <= t.listedAt) return;
    const m = member(c.namespace, c.name);
    const prev = t.entries.get(m);
    const deleted = c.type === "DELETED";
    if (!prev) {
      if (deleted) return;
      t.added.push(m);
    }
    // The watch cache's bytes of the object (encoded once there, shared).
    const bytes = deleted ? undefined : c.bytes;
    // The version before stays only while a snapshot may read it (it is dropped at compaction).
    t.entries.set(m, { revision: c.revision, bytes, labels: c.labels, fields: c.fields, prev });
    if (prev || deleted) t.history.add(m);
  }

  private setRevision(rev: number): void {
    this.rev = rev;
    if (rev < 0 || !this.waiters.length) return;
    const still: typeof this.waiters = [];
    for (const w of this.waiters) {
      if (w.rev <= rev) w.resolve(true);
      else still.push(w);
    }
    this.waiters = still;
  }

  /**
   * Resolves true once the cache holds revision `rev` (or a later one), false
   * after `timeoutMs` — or as soon as the call in scope is given up (its
   * deadline passed: handlers/call-signal.ts).
   */
  waitFor(rev: number, timeoutMs: number): Promise<boolean> {
    if (this.rev >= 0 && this.rev >= rev) return Promise.resolve(true);
    const signal = callSignal();
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const giveUp = (): void => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((x) => x !== w);
        resolve(false);
      };
      const w = {
        rev,
        resolve: (ok: boolean): void => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", giveUp);
          resolve(ok);
        },
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", giveUp);
        giveUp();
      }, timeoutMs);
      signal?.addEventListener("abort", giveUp, { once: true });
      this.waiters.push(w);
    });
  }

  /** An object at the cache's revision (undefined: none), or undefined while the cache is not ready. */
  get(resource: string, namespace: string, name: string): { found: Stored | undefined } | undefined {
    if (this.rev < 0) return undefined;
    const v = this.tables.get(resource)?.entries.get(member(namespace, name));
    return { found: v?.bytes ? { bytes: v.bytes, revision: v.revision } : undefined };
  }

  /**
   * A page of a resource in (namespace, name) order at `revision` (default
   * the cache's), the selected objects only, `limit` of them (0: all);
   * "expired" when that revision's state is no longer kept (compacted) or not
   * reached; undefined while the cache is not ready.
   */
  list(
    resource: string,
    opts: { namespace?: string; after?: string; limit?: number; revision?: number; select?: CachePredicate } = {},
  ): Page | "expired" | undefined {
    if (this.rev < 0) return undefined;
    const at = opts.revision ?? this.rev;
    if (at < this.compacted || at > this.rev) return "expired";
    const t = this.tables.get(resource);
    if (!t) return { revision: at, items: [] };
    const keys = this.sortedKeys(t);
    const prefix = opts.namespace ? `${opts.namespace}/` : "";
    const start = opts.after && opts.after >= prefix ? opts.after : prefix;
    let i = lowerBound(keys, start);
    if (opts.after && i < keys.length && keys[i] === opts.after) i++;
    const limit = opts.limit ?? 0;
    const items: Stored[] = [];
    let last: string | undefined;
    for (; i < keys.length; i++) {
      const m = keys[i] as string;
      if (prefix && !m.startsWith(prefix)) break;
      let v = t.entries.get(m);
      while (v && v.revision > at) v = v.prev;
      if (!v?.bytes || (opts.select && !opts.select(v.labels, v.fields))) continue;
      // One more selected object after a full page: there is a next page (none after the last, as Kubernetes).
      if (limit > 0 && items.length === limit) return { revision: at, items, next: last };
      items.push({ bytes: v.bytes, revision: v.revision });
      last = m;
    }
    return { revision: at, items };
  }

  private sortedKeys(t: Table): string[] {
    if (t.added.length) {
      t.sorted = merge(t.sorted, t.added.sort(byteOrder));
      t.added = [];
    }
    return t.sorted;
  }

  /** Marks the revision now; drops the versions no snapshot after `historyMs` ago can read. */
  private compactTick(): void {
    if (this.rev < 0) return;
    const now = Date.now();
    this.marks.push({ at: now, rev: this.rev });
    let to = -1;
    while (this.marks.length && (this.marks[0] as { at: number }).at <= now - this.historyMs) to = (this.marks.shift() as { rev: number }).rev;
    if (to > this.compacted) this.compact(to);
  }

  /** Keeps, for every member, the versions a snapshot at `to` or later reads. */
  compact(to: number): void {
    if (to > this.rev) to = this.rev;
    for (const t of this.tables.values()) {
      let removed = false;
      for (const m of t.history) {
        const newest = t.entries.get(m);
        let v = newest;
        while (v && v.revision > to) v = v.prev;
        if (v) v.prev = undefined;
        if (newest && !newest.bytes && newest.revision <= to) {
          t.entries.delete(m);
          removed = true;
          t.history.delete(m);
        } else if (newest?.bytes && !newest.prev) t.history.delete(m);
      }
      if (removed) {
        this.sortedKeys(t);
        t.sorted = t.sorted.filter((m) => t.entries.has(m));
      }
    }
    this.compacted = Math.max(this.compacted, to);
  }
}

function byteOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The first index whose key is ≥ `k`. */
function lowerBound(keys: string[], k: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((keys[mid] as string) < k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Two sorted arrays as one. */
function merge(a: string[], b: string[]): string[] {
  const out = new Array<string>(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) out[k++] = (a[i] as string) <= (b[j] as string) ? (a[i++] as string) : (b[j++] as string);
  while (i < a.length) out[k++] = a[i++] as string;
  while (j < b.length) out[k++] = b[j++] as string;
  return out;
}
