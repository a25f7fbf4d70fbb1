import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { kindOf, selectableFields } from "@choreo/kit";
import { ALL_EVENTS, consumeEvents, streamState } from "@choreo/kit/bus";
import type { WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Logger } from "@choreo/kit/log";
import { sleep } from "@choreo/kit/lifecycle";

/** One change as the cache holds it: decoded once, with what selection needs. */
export interface CachedEvent {
  readonly revision: number;
  readonly resource: string;
  readonly namespace: string;
  readonly event: WatchEvent;
  readonly labels: Record<string, string>;
  readonly fields: Record<string, string>;
}

/** Options of the watch cache. */
export interface WatchCacheOptions {
  nc: NatsConnection;
  jsm: JetStreamManager;
  log: Logger;
  /** How many recent changes to keep in memory. */
  capacity: number;
}

/**
 * The last `capacity` changes of the event log, in memory, fed by one
 * JetStream consumer per api replica. HTTP and gRPC watches read from it
 * instead of opening a consumer each. Revisions in the log are contiguous
 * (stream sequence == revision), so revision r sits at slot r % capacity.
 */
export class WatchCache {
  readonly name = "watch-cache";
  private readonly ring: (CachedEvent | undefined)[];
  /** Revision just before the oldest held change: watches from here on are served. */
  private base = -1;
  private last = -1;
  private waiters: (() => void)[] = [];
  private readyResolve!: () => void;
  /** Resolves once the cache holds everything the log had when it started. */
  readonly ready: Promise<void> = new Promise((r) => (this.readyResolve = r));

  constructor(private readonly opts: WatchCacheOptions) {
    this.ring = new Array<CachedEvent | undefined>(opts.capacity);
  }

  /** The newest revision held (-1 before start). */
  get lastRevision(): number {
    return this.last;
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
    for await (const ev of consumeEvents({ nc: this.opts.nc, jsm: this.opts.jsm, filter: ALL_EVENTS, fromRevision: from, signal })) {
      this.append(ev);
      if (this.last >= lastRevision) this.readyResolve();
    }
  }

  private reset(from: number): void {
    this.ring.fill(undefined);
    this.base = from;
    this.last = from;
  }

  private append(ev: WatchEvent): void {
    const revision = ev.revision;
    if (revision !== this.last + 1) {
      // Not contiguous (the log was recreated): start over from here.
      this.opts.log.warn({ expected: this.last + 1, revision }, "watch cache gap; resetting");
      this.reset(revision - 1);
    }
    const obj = ev.object;
    if (!obj?.kind) return;
    const info = kindOf(obj);
    const value = obj.kind.value;
    this.ring[revision % this.opts.capacity] = {
      revision,
      resource: info.resource,
      namespace: value.metadata?.namespace ?? "",
      event: ev,
      labels: value.metadata?.labels ?? {},
      fields: selectableFields(info, value),
    };
    this.last = revision;
    if (this.base < this.last - this.opts.capacity) this.base = this.last - this.opts.capacity;
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private changed(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.waiters.push(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  /**
   * Every cached change after `fromRevision`, then live ones, until the
   * signal aborts. Returns (ends) with `"expired"` when the watcher fell
   * further behind than the cache holds.
   */
  async *since(fromRevision: number, signal: AbortSignal): AsyncGenerator<CachedEvent, "expired" | "aborted"> {
    let cursor = fromRevision;
    while (!signal.aborted) {
      if (cursor < this.base) return "expired";
      while (cursor < this.last) {
        if (cursor < this.base) return "expired";
        const c = this.ring[(cursor + 1) % this.opts.capacity];
        cursor++;
        if (c && c.revision === cursor) yield c;
        if (signal.aborted) return "aborted";
      }
      await this.changed(signal);
    }
    return "aborted";
  }
}
