import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { isExpired } from "../api/errors.js";
import { selectableFields } from "../api/fields.js";
import { keyOf, kindByCase, unwrap, type KindCase, type KindInfo, type KindValue } from "../api/kinds.js";
import { consumeEvents, followEvents, resourceFilter, type FollowOptions } from "../bus/index.js";
import type { ApiClient } from "../client/index.js";
import { parseFieldSelector, parseLabelSelector, type FieldSelector, type LabelSelector } from "../apimachinery/index.js";
import { FailureLog, type Logger } from "../log/index.js";
import { sleep } from "../lifecycle/index.js";
import type { Cache } from "./cache.js";
import type { Transform } from "./transform.js";

/** Callbacks of an informer. They must only enqueue keys, never block. */
export interface EventHandler<T> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T): void;
}

/** The constant message of a failed list or watch. */
const LIST_WATCH_FAILED = "list/watch failed; retrying";
/** The constant message of a follower's lost connection (it catches up from the event log once back). */
const BUS_LOST = "bus connection lost; catching up from the event log once back";

/** Options of an informer. */
export interface InformerOptions<C extends KindCase = KindCase> {
  client: ApiClient;
  nc: NatsConnection;
  jsm: JetStreamManager;
  kind: C;
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** The event-log subject filter (default: every change of the resource). E.g. a node agent's pods. */
  filterSubject?: string;
  /**
   * Read changes live from the subjects the stream republishes pod changes
   * to (`followEvents`; a pods filter only): a node agent's pods, at a cost
   * to nats-server that does not grow with the number of nodes.
   */
  live?: boolean;
  /** With `live`: changes the informer's owner already holds (`followEvents`' `known`: its own writes, as the api answered them). */
  known?: FollowOptions["known"];
  /** Replays every cached object as an update this often (0: never). */
  resyncMs?: number;
  /**
   * What the cache keeps of each object (e.g. `stripPod()`): applied to every
   * listed and watched object (deletions too) before the cache, the indexes
   * and the handlers see it; selectors match the whole object. Cached objects
   * are then not whole: a write must not be built from one (see transform.ts).
   * Listed and watched objects are decoded for the informer alone, so the
   * transform gets them as its own (`own`: it may change them in place), but
   * for the owner's `known` writes.
   */
  transform?: Transform<KindValue<C>>;
  log: Logger;
  /**
   * Where failed lists and watches are logged: a process's many informers of one kind (hollow nodes) share one, so
   * that the bus or the api away writes a few whole lines and a summary, not a line per informer per retry.
   * Default: one of the informer's own.
   */
  failures?: FailureLog;
}

/**
 * A cache of one kind fed by list, then the event log from the list's
 * revision (invariant 3). A revision the log no longer holds (410) means
 * relist; the diff against the cache becomes add/update/delete callbacks.
 * Objects handed out are shared: copy before changing them.
 */
export class Informer<C extends KindCase> implements Cache<KindValue<C>> {
  readonly name: string;
  readonly info: KindInfo;
  private readonly items = new Map<string, KindValue<C>>();
  private readonly handlers: EventHandler<KindValue<C>>[] = [];
  private readonly indexers = new Map<string, (obj: KindValue<C>) => string[]>();
  private readonly indexes = new Map<string, Map<string, Set<string>>>();
  private readonly labels: LabelSelector;
  private readonly fields: FieldSelector;
  private readonly keep: (obj: KindValue<C>, own: boolean) => KindValue<C>;
  private synced = false;
  private syncWaiters: (() => void)[] = [];
  /** How many times the informer listed (1 + relists). */
  lists = 0;
  /** The revision the cache reflects. */
  revision = 0;
  private watchAbort = new AbortController();
  private rewindTo: number | undefined;
  /** Failed list/watch attempts in a row (the retry's back-off). */
  private failures = 0;
  /** `opts.failures`, or one of its own made at the first failure. */
  private ownFailureLog: FailureLog | undefined;

  constructor(private readonly opts: InformerOptions<C>) {
    this.info = kindByCase(opts.kind);
    this.name = `informer-${this.info.resource}`;
    this.labels = parseLabelSelector(opts.labelSelector ?? "");
    this.fields = parseFieldSelector(opts.fieldSelector ?? "");
    this.keep = opts.transform ?? ((o) => o);
  }

  private get failureLog(): FailureLog {
    return (this.ownFailureLog ??= this.opts.failures ?? new FailureLog(this.opts.log));
  }

  /** What the failure log names this informer by: its resource and what of it it reads. */
  private get subject(): string {
    const o = this.opts;
    return `${this.info.resource}|${o.namespace ?? ""}|${o.filterSubject ?? ""}|${o.labelSelector ?? ""}|${o.fieldSelector ?? ""}`;
  }

  /** A list succeeded: the retry back-off starts over, and a failing streak ends. */
  private recovered(): void {
    if (this.failures === 0) return;
    this.failures = 0;
    this.failureLog.recovered(LIST_WATCH_FAILED, this.subject, { resource: this.info.resource }, this.opts.log);
  }

  addEventHandler(h: EventHandler<KindValue<C>>): void {
    this.handlers.push(h);
  }

  /** Adds an index: `byIndex(name, value)` then finds objects whose `fn` returned value. */
  addIndexer(name: string, fn: (obj: KindValue<C>) => string[]): void {
    this.indexers.set(name, fn);
    const idx = new Map<string, Set<string>>();
    this.indexes.set(name, idx);
    for (const [k, o] of this.items) for (const v of fn(o)) addTo(idx, v, k);
  }

  get(key: string): KindValue<C> | undefined {
    return this.items.get(key);
  }

  list(): KindValue<C>[] {
    return [...this.items.values()];
  }

  keys(): string[] {
    return [...this.items.keys()];
  }

  byIndex(name: string, value: string): KindValue<C>[] {
    const keys = this.indexes.get(name)?.get(value);
    if (!keys) return [];
    const out: KindValue<C>[] = [];
    for (const k of keys) {
      const o = this.items.get(k);
      if (o !== undefined) out.push(o);
    }
    return out;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves once the first list is in the cache. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.syncWaiters.push(resolve);
      signal?.addEventListener("abort", () => reject(new Error("aborted before sync")), { once: true });
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    let resync: NodeJS.Timeout | undefined;
    if (this.opts.resyncMs) {
      resync = setInterval(() => {
        for (const o of this.items.values()) for (const h of this.handlers) h.onUpdate?.(o, o);
      }, this.opts.resyncMs);
    }
    this.failures = 0;
    try {
      while (!signal.aborted) {
        try {
          let listFirst = false;
          if (this.rewindTo !== undefined) {
            this.revision = this.rewindTo;
            this.rewindTo = undefined;
          } else if (this.opts.live) {
            // Listed by the watch once it hears live changes (followEvents): nothing to catch up from the log.
            listFirst = true;
          } else {
            await this.relist();
          }
          if (!listFirst) this.recovered();
          this.watchAbort = new AbortController();
          await this.watch(AbortSignal.any([signal, this.watchAbort.signal]), listFirst);
        } catch (err) {
          if (signal.aborted) break;
          if (isExpired(err)) {
            this.opts.log.info({ resource: this.info.resource, revision: this.revision }, "revision expired; relisting");
            continue;
          }
          this.failures++;
          this.failureLog.failed(LIST_WATCH_FAILED, this.subject, err, { resource: this.info.resource }, this.opts.log);
          await sleep(Math.min(5_000, 100 * 2 ** this.failures), signal);
        }
      }
    } finally {
      if (resync) clearInterval(resync);
    }
  }

  /**
   * Restarts the watch from an older revision without relisting, as if the
   * informer had been cut off since then (tests the 410 → relist path).
   */
  rewind(revision: number): void {
    this.rewindTo = revision;
    this.watchAbort.abort();
  }

  private async relist(): Promise<void> {
    const fresh = new Map<string, KindValue<C>>();
    let cont = "";
    let revision = 0;
    do {
      const page = await this.opts.client.list(this.info.resource, {
        namespace: this.opts.namespace,
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
        limit: 5_000,
        continue: cont,
      });
      for (const o of page.items) {
        const v = unwrap(o) as KindValue<C>;
        // Transformed page by page: a relist of 150,000 pods never holds them all whole.
        fresh.set(keyOf(v.metadata ?? { namespace: "", name: "" }), this.keep(v, true));
      }
      cont = page.metadata?.continue ?? "";
      revision = Math.max(revision, Number(page.metadata?.resourceVersion ?? 0));
    } while (cont);
    this.lists++;
    for (const [k, old] of this.items) if (!fresh.has(k)) this.remove(k, old);
    for (const [k, v] of fresh) this.put(k, v);
    this.revision = revision;
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncWaiters.splice(0)) w();
    }
  }

  private async watch(signal: AbortSignal, listFirst = false): Promise<void> {
    const filter = this.opts.filterSubject ?? resourceFilter(this.info.resource, this.opts.namespace ?? "");
    const onFallback = (): void => this.opts.log.info({ resource: this.info.resource, filter }, "event stream has no RePublish; reading through a consumer");
    const relisted = async (): Promise<number> => {
      await this.relist();
      this.recovered();
      return this.revision;
    };
    const events = this.opts.live
      ? followEvents({
          nc: this.opts.nc,
          jsm: this.opts.jsm,
          filter,
          fromRevision: listFirst ? relisted : this.revision,
          signal,
          onFallback,
          // Through the failure log: a process's thousands of followers on one connection (hollow nodes) write a
          // few lines and a summary when it drops, not three lines each.
          onConnection: (up) => {
            if (up) this.opts.log.debug({ resource: this.info.resource, filter }, "bus connection back; catching up from the event log");
            else
              this.failureLog.failed(BUS_LOST, this.subject, "the connection to nats-server dropped", { resource: this.info.resource, filter }, this.opts.log);
          },
          onCaughtUp: (after, delivered) => {
            const fields = { resource: this.info.resource, filter, after, delivered };
            if (this.failureLog.failing(BUS_LOST, this.subject)) this.failureLog.recovered(BUS_LOST, this.subject, fields, this.opts.log);
            else this.opts.log.debug(fields, "caught up from the event log");
          },
          known: this.opts.known,
        })
      : consumeEvents({ nc: this.opts.nc, jsm: this.opts.jsm, filter, fromRevision: this.revision, signal });
    // Each event's object was decoded for this informer alone — but for the owner's own writes (`known`), which it still holds.
    const own = !this.opts.known;
    for await (const ev of events) {
      this.revision = ev.revision;
      const o = ev.object;
      if (!o?.kind || o.kind.$case !== this.opts.kind) continue;
      const v = o.kind.value as KindValue<C>;
      const meta = v.metadata;
      if (!meta) continue;
      if (this.opts.namespace && meta.namespace !== this.opts.namespace) continue;
      const key = keyOf(meta);
      const matches = this.labels.matches(meta.labels) && this.fields.matches((f) => selectableFields(this.info, v)[f]);
      if (ev.type === "DELETED" || !matches) {
        const old = this.items.get(key);
        if (old) this.remove(key, ev.type === "DELETED" ? this.keep(v, own) : old);
      } else if (this.items.get(key)?.metadata?.resourceVersion !== meta.resourceVersion) {
        this.put(key, this.keep(v, own));
      }
    }
  }

  private put(key: string, v: KindValue<C>): void {
    const old = this.items.get(key);
    if (old && old.metadata?.resourceVersion === v.metadata?.resourceVersion) return;
    this.items.set(key, v);
    for (const [name, fn] of this.indexers) {
      const idx = this.indexes.get(name) as Map<string, Set<string>>;
      const now = fn(v);
      if (old) {
        const before = fn(old);
        // Most updates (a bind, a status) leave an object's index values as they were: nothing to move.
        if (sameValues(before, now)) continue;
        for (const x of before) removeFrom(idx, x, key);
      }
      for (const x of now) addTo(idx, x, key);
    }
    for (const h of this.handlers) {
      if (old) h.onUpdate?.(old, v);
      else h.onAdd?.(v);
    }
  }

  private remove(key: string, last: KindValue<C>): void {
    const old = this.items.get(key);
    this.items.delete(key);
    for (const [name, fn] of this.indexers) {
      const idx = this.indexes.get(name) as Map<string, Set<string>>;
      if (old) for (const x of fn(old)) removeFrom(idx, x, key);
    }
    for (const h of this.handlers) h.onDelete?.(last);
  }
}

function sameValues(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Takes `key` out of the index entry `value`, and the entry out once empty (an index by owner uid would otherwise keep one per owner ever seen). */
function removeFrom(idx: Map<string, Set<string>>, value: string, key: string): void {
  const s = idx.get(value);
  if (!s) return;
  s.delete(key);
  if (s.size === 0) idx.delete(value);
}

function addTo(idx: Map<string, Set<string>>, value: string, key: string): void {
  let s = idx.get(value);
  if (!s) idx.set(value, (s = new Set()));
  s.add(key);
}
