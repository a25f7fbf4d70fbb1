import { BinaryWriter } from "@bufbuild/protobuf/wire";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { kindOf, selectableFields } from "@choreo/kit";
import { ALL_EVENTS, consumeEventRecords, streamState } from "@choreo/kit/bus";
import { Object as ObjectMsg, type WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Logger } from "@choreo/kit/log";
import { sleep } from "@choreo/kit/lifecycle";
import { eventParts } from "./event-revision.js";

/**
 * One change as the cache holds it, with what selection needs (resource,
 * namespace, labels, selectable fields). The object is kept encoded (its
 * stored bytes, which the object cache keeps too: a copy of the object's
 * bytes in the log's message, or encoded from the decoded event when there
 * is no message, as in tests); the decoded event is kept
 * only while the change is among the newest `DECODED_WINDOW` (the watchers
 * that keep up share it), after that `event` decodes it again on each read.
 */
export class CachedEvent {
  readonly resource: string;
  readonly namespace: string;
  readonly name: string;
  readonly type: string;
  readonly labels: Record<string, string>;
  readonly fields: Record<string, string>;
  /** The object encoded (ObjectMsg), as the store keeps it but with its resourceVersion. */
  readonly bytes: Buffer;
  private decoded: WatchEvent | undefined;
  private readonly status: WatchEvent["status"];
  private readonly prevLabels: Record<string, string>;
  private readonly prevFields: Record<string, string>;
  private readonly hasPrev: boolean;

  /** `objectBytes`: the object's bytes in the log's message (copied here; a view of the message is not kept), else the decoded object is encoded. */
  constructor(
    readonly revision: number,
    ev: WatchEvent & { object: ObjectMsg & { kind: NonNullable<ObjectMsg["kind"]> } },
    objectBytes?: Uint8Array,
  ) {
    const info = kindOf(ev.object);
    const meta = ev.object.kind.value.metadata;
    this.resource = info.resource;
    this.namespace = meta?.namespace ?? "";
    this.name = meta?.name ?? "";
    this.type = ev.type;
    this.labels = meta?.labels ?? {};
    this.fields = selectableFields(info, ev.object.kind.value);
    // A copy of its own size (new Uint8Array copies): a view would hold the connection's whole read buffer, and Buffer.from's pool its 8 KiB slab.
    const encoded = objectBytes ? new Uint8Array(objectBytes) : encodeObject(ev.object);
    this.bytes = Buffer.from(encoded.buffer, encoded.byteOffset, encoded.byteLength);
    this.status = ev.status;
    // Records equal to the object's own (labels unchanged by an update) or empty are kept once, not per change.
    this.prevLabels = compactRecord(ev.prevLabels, this.labels);
    this.prevFields = compactRecord(ev.prevFields, this.fields);
    this.hasPrev = ev.hasPrev;
    this.decoded = ev;
  }

  /** The change as a watch event: the one decoded from the log while it is recent, else decoded from `bytes`. */
  get event(): WatchEvent {
    return (
      this.decoded ?? {
        type: this.type,
        object: ObjectMsg.decode(this.bytes),
        status: this.status,
        revision: this.revision,
        prevLabels: this.prevLabels,
        prevFields: this.prevFields,
        hasPrev: this.hasPrev,
      }
    );
  }

  /** Whether the decoded event is still held. */
  get isDecoded(): boolean {
    return this.decoded !== undefined;
  }

  /** Drops the decoded event (kept: the bytes and what selection reads). */
  dropDecoded(): void {
    this.decoded = undefined;
  }

  /** What the change costs the cache in memory, roughly: its bytes and the records beside them. */
  get size(): number {
    return this.bytes.byteLength + ENTRY_OVERHEAD;
  }
}

/**
 * One writer for every entry's encode (encode is synchronous): its buffer, grown once to the largest object,
 * is reused, where a new writer starts empty and doubles from 128 bytes, zero-filling and copying each time.
 * `finish` hands out a copy of what was written.
 */
let writer = new BinaryWriter();

function encodeObject(o: ObjectMsg): Uint8Array {
  try {
    return ObjectMsg.encode(o, writer).finish();
  } catch (err) {
    writer = new BinaryWriter(); // left half-written
    throw err;
  }
}

const EMPTY: Record<string, string> = Object.freeze({}) as Record<string, string>;

/** `r`, or `same` when it holds the same entries, or one shared empty record. */
function compactRecord(r: Record<string, string>, same: Record<string, string>): Record<string, string> {
  let n = 0;
  for (const k in r) {
    if (r[k] !== same[k]) return r;
    n++;
  }
  if (n === 0) return EMPTY;
  for (const _k in same) if (--n < 0) return r;
  return n === 0 ? same : r;
}

/** The memory an entry holds besides the object's bytes (the entry, labels and fields records, the Buffer), an estimate. */
const ENTRY_OVERHEAD = 512;

/** How many of the newest changes keep their decoded event (shared by the watchers that keep up). */
export const DECODED_WINDOW = 2_048;

/** The default bound of the bytes the cache holds: 256 MiB. */
export const DEFAULT_MAX_BYTES = 256 * 1024 * 1024;

/** Options of the watch cache. */
export interface WatchCacheOptions {
  nc: NatsConnection;
  jsm: JetStreamManager;
  log: Logger;
  /** How many recent changes to keep in memory. */
  capacity: number;
  /** How many bytes of changes to keep at most (objects' bytes plus an estimate of each entry's records): DEFAULT_MAX_BYTES. */
  maxBytes?: number;
}

/**
 * The last `capacity` changes of the event log (fewer when they hold more
 * than `maxBytes`), in memory, fed by one JetStream consumer per api
 * replica. HTTP and gRPC watches read from it instead of opening a consumer
 * each. Revisions in the log are contiguous (stream sequence == revision), so
 * revision r sits at slot r % capacity.
 */
export class WatchCache {
  readonly name = "watch-cache";
  private readonly ring: (CachedEvent | undefined)[];
  private readonly maxBytes: number;
  private readonly window: number;
  /** Revision just before the oldest held change: watches from here on are served. */
  private base = -1;
  private last = -1;
  /** What the held changes cost (CachedEvent.size summed). */
  private held = 0;
  private waiters: (() => void)[] = [];
  private wakeQueued = false;
  private readyResolve!: () => void;
  /** Resolves once the cache holds everything the log had when it started. */
  readonly ready: Promise<void> = new Promise((r) => (this.readyResolve = r));

  constructor(private readonly opts: WatchCacheOptions) {
    this.ring = new Array<CachedEvent | undefined>(opts.capacity);
    this.maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
    this.window = Math.min(DECODED_WINDOW, opts.capacity);
  }

  /** The newest revision held (-1 before start). */
  get lastRevision(): number {
    return this.last;
  }

  /** The revision just before the oldest held change (-1 before start). */
  get baseRevision(): number {
    return this.base;
  }

  /** What the held changes cost in memory, roughly (objects' bytes plus an estimate per entry). */
  get heldBytes(): number {
    return this.held;
  }

  /** Whether a watch from revision `rev` can be served from memory. */
  canServe(rev: number): boolean {
    return this.base >= 0 && rev >= this.base && rev >= this.last - this.opts.capacity;
  }

  async start(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.follow(signal);
      } catch (err) {
        if (signal.aborted) break;
        this.opts.log.error({ err }, "watch cache consumer failed; restarting");
        await sleep(500, signal);
      }
    }
    this.wake();
  }

  private async follow(signal: AbortSignal): Promise<void> {
    const { firstRevision, lastRevision } = await streamState(this.opts.jsm);
    let from = Math.max(firstRevision - 1, lastRevision - this.opts.capacity, 0);
    if (this.last >= 0 && this.last >= from)
      from = this.last; // resume after a consumer failure
    else this.reset(from);
    if (this.last >= lastRevision) this.readyResolve();
    for await (const { event, data } of consumeEventRecords({ nc: this.opts.nc, jsm: this.opts.jsm, filter: ALL_EVENTS, fromRevision: from, signal })) {
      this.append(event, data);
      if (this.last >= lastRevision) this.readyResolve();
    }
  }

  private reset(from: number): void {
    this.ring.fill(undefined);
    this.held = 0;
    this.base = from;
    this.last = from;
  }

  /**
   * Adds the change at the next revision (exported for tests: the consumer
   * calls it). `data`: the log message's bytes (the encoded event), whose
   * object's bytes are kept instead of encoding the decoded object again.
   */
  append(ev: WatchEvent, data?: Uint8Array): void {
    const revision = ev.revision;
    if (revision !== this.last + 1) {
      // Not contiguous (the log was recreated): start over from here.
      this.opts.log.warn({ expected: this.last + 1, revision }, "watch cache gap; resetting");
      this.reset(revision - 1);
    }
    const cap = this.opts.capacity;
    const slot = revision % cap;
    // The slot's previous change (revision - capacity) leaves, whether or not this one has an object.
    const gone = this.ring[slot];
    if (gone) this.held -= gone.size;
    this.ring[slot] = undefined;
    const obj = ev.object;
    if (obj?.kind) {
      const c = new CachedEvent(revision, ev as ConstructorParameters<typeof CachedEvent>[1], data && eventParts(data)?.object);
      this.ring[slot] = c;
      this.held += c.size;
    }
    this.last = revision;
    if (this.base < this.last - cap) this.base = this.last - cap;
    // Older than the window: the decoded event goes (the bytes stay).
    const old = revision - this.window;
    const o = old > this.base ? this.ring[old % cap] : undefined;
    if (o?.revision === old) o.dropDecoded();
    // Over the byte bound: the oldest changes leave (watches from before them get 410, as past `capacity`).
    while (this.held > this.maxBytes && this.base < this.last) {
      const i = (this.base + 1) % cap;
      const c = this.ring[i];
      if (c?.revision === this.base + 1) {
        this.held -= c.size;
        this.ring[i] = undefined;
      }
      this.base++;
    }
    this.wakeSoon();
  }

  /**
   * Wakes the waiting watchers once the changes that arrived together are
   * all in (setImmediate: after the consumer's batch), so each drains them in
   * one go instead of waking per change.
   */
  private wakeSoon(): void {
    if (this.wakeQueued || !this.waiters.length) return;
    this.wakeQueued = true;
    setImmediate(() => {
      this.wakeQueued = false;
      this.wake();
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /**
   * Every cached change after `fromRevision`, then live ones, until the
   * signal aborts. Returns (ends) with `"expired"` when the watcher fell
   * further behind than the cache holds. With `only`, the changes of that
   * resource (and namespace, if not "") alone: the others are passed over
   * here rather than handed to the watcher one by one.
   */
  async *since(fromRevision: number, signal: AbortSignal, only?: { resource: string; namespace?: string }): AsyncGenerator<CachedEvent, "expired" | "aborted"> {
    const resource = only?.resource;
    const namespace = only?.namespace || undefined;
    let cursor = fromRevision;
    // One abort listener for the whole watch (not one per wait): it ends the current wait.
    let resume: (() => void) | undefined;
    const onAbort = (): void => resume?.();
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      while (!signal.aborted) {
        if (cursor < this.base) return "expired";
        while (cursor < this.last) {
          if (cursor < this.base) return "expired";
          const c = this.ring[(cursor + 1) % this.opts.capacity];
          cursor++;
          if (!c || c.revision !== cursor) continue;
          if (resource !== undefined && (c.resource !== resource || (namespace !== undefined && c.namespace !== namespace))) continue;
          yield c;
          if (signal.aborted) return "aborted";
        }
        await new Promise<void>((resolve) => {
          resume = resolve;
          this.waiters.push(resolve);
        });
        resume = undefined;
      }
      return "aborted";
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }
}
