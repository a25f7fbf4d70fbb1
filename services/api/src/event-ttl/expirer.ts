// Events expire, as Kubernetes' --event-ttl (1 h by default): an Event is
// deleted once `ttl` has passed since it was last written. Kubernetes gets
// this from an etcd lease attached at every write; choreo has no leases in
// Redis (a key vanishing by itself would leave no record on the revision
// line), so the api deletes expired Events through its own handlers: each
// expiry is an ordinary DELETE, on the revision line, seen by every watcher
// and cache, its Redis key removed.
//
// Data flow: a list of every Event, then a watch from the list's revision
// (a restart finds all of them) → a map key → {resourceVersion, expiry} →
// a sweep every `sweepMs` deletes the expired ones with a resourceVersion
// precondition (an Event written meanwhile is kept: its MODIFIED moves the
// expiry).
//
// When an Event was last written: for a change seen live, when it was seen;
// for one listed at (re)start, the latest of its own times (series
// lastObservedTime, lastTimestamp, eventTime, creationTimestamp).
import { isConflict, isNotFound, keyOf, unwrap, type WatchEvent } from "@choreo/kit";
import type { Logger } from "@choreo/kit/log";
import { sleep, type Runnable } from "@choreo/kit/lifecycle";
import { ListRequest, WatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Event } from "@choreo/kit/gen/choreo/core/v1/core";
import { DeleteOptions } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { ApiHandlers } from "../handlers/api-handlers.js";

export interface EventExpirerOptions {
  handlers: Pick<ApiHandlers, "list" | "watch" | "delete">;
  /** How long an Event lives after its last write (ms; CHOREO_EVENT_TTL). */
  ttlMs: number;
  log: Logger;
  /** How often expired Events are looked for (default: a tenth of the TTL, between 1 s and 60 s). */
  sweepMs?: number;
  /** Deletes in flight at once during a sweep (default 16). */
  concurrency?: number;
  /** Pause before a watch that ended is opened again (default 1 s). */
  retryMs?: number;
  now?: () => number;
  /** Called with the number of Events a sweep deleted (metrics). */
  onExpired?: (n: number) => void;
}

/** The latest time an Event says it was written (ms since the epoch; NaN when it carries none). */
export function lastWritten(e: Event): number {
  const times = [e.series?.lastObservedTime, e.lastTimestamp, e.eventTime, e.metadata?.creationTimestamp]
    .filter((t): t is string => !!t)
    .map((t) => Date.parse(t))
    .filter((t) => !Number.isNaN(t));
  return times.length ? Math.max(...times) : NaN;
}

/** Deletes Events `ttlMs` after their last write. */
export class EventExpirer implements Runnable {
  readonly name = "event-expirer";
  /** namespace/name → the version seen last and when it expires. */
  private readonly tracked = new Map<string, { resourceVersion: string; expiresAt: number }>();
  readonly stats = { expired: 0, kept: 0 };

  constructor(private readonly opts: EventExpirerOptions) {}

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  /** How many Events are waiting to expire. */
  get size(): number {
    return this.tracked.size;
  }

  /** Takes one watch event into account; `live` is false for the synthetic ADDED of a (re)start's listing. */
  observe(ev: Pick<WatchEvent, "type" | "object">, live: boolean): void {
    if (!ev.object || ev.object.kind?.$case !== "event") return;
    const e = unwrap(ev.object) as Event;
    const key = keyOf(e.metadata!);
    if (ev.type === "DELETED") {
      this.tracked.delete(key);
      return;
    }
    const own = lastWritten(e);
    const written = live ? Math.max(this.now(), Number.isNaN(own) ? 0 : own) : Number.isNaN(own) ? this.now() : own;
    this.tracked.set(key, { resourceVersion: e.metadata?.resourceVersion ?? "", expiresAt: written + this.opts.ttlMs });
  }

  /** Deletes every Event past its expiry; resolves to how many went. */
  async sweep(signal?: AbortSignal): Promise<number> {
    const now = this.now();
    const due = [...this.tracked].filter(([, t]) => t.expiresAt <= now);
    let deleted = 0;
    const work = async (): Promise<void> => {
      for (let next = due.shift(); next && !signal?.aborted; next = due.shift()) {
        const [key, t] = next;
        const slash = key.indexOf("/");
        const [namespace, name] = slash < 0 ? ["", key] : [key.slice(0, slash), key.slice(slash + 1)];
        try {
          await this.opts.handlers.delete({
            resource: "events",
            namespace,
            name,
            options: DeleteOptions.fromPartial({ preconditions: { uid: "", resourceVersion: t.resourceVersion } }),
          });
          deleted++;
          // The DELETED the watch brings removes it too; removing it now spares a second try.
          if (this.tracked.get(key) === t) this.tracked.delete(key);
        } catch (err) {
          if (isNotFound(err)) {
            if (this.tracked.get(key) === t) this.tracked.delete(key);
          } else if (isConflict(err)) {
            // Written since: the watch's MODIFIED sets the new expiry.
            this.stats.kept++;
          } else throw err;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, this.opts.concurrency ?? 16) }, work));
    this.stats.expired += deleted;
    if (deleted) this.opts.onExpired?.(deleted);
    return deleted;
  }

  private get sweepMs(): number {
    return this.opts.sweepMs ?? Math.min(60_000, Math.max(1_000, Math.floor(this.opts.ttlMs / 10)));
  }

  /** Every current Event, page by page (one snapshot); resolves to the revision the listing is at. */
  private async listAll(): Promise<string> {
    let cont = "";
    let at = "";
    do {
      const page = await this.opts.handlers.list(ListRequest.fromPartial({ resource: "events", limit: 1000, continue: cont }));
      at ||= page.metadata?.resourceVersion ?? "";
      for (const o of page.items) this.observe({ type: "ADDED", object: o }, false);
      cont = page.metadata?.continue ?? "";
    } while (cont);
    return at;
  }

  private async follow(signal: AbortSignal): Promise<void> {
    let resourceVersion = "";
    while (!signal.aborted) {
      try {
        // A start, or a watch too old to resume: list first. The Events gone meanwhile answer NotFound to
        // their delete and are dropped then.
        if (!resourceVersion) resourceVersion = await this.listAll();
        for await (const ev of this.opts.handlers.watch(WatchRequest.fromPartial({ resource: "events", resourceVersion, allowBookmarks: true }), signal)) {
          if (ev.type === "ERROR") {
            if (ev.status?.code === 410) resourceVersion = "";
            break;
          }
          const rv = ev.object ? unwrap(ev.object).metadata?.resourceVersion : undefined;
          if (ev.type !== "BOOKMARK") this.observe(ev, true);
          if (rv) resourceVersion = rv;
        }
      } catch (err) {
        if (signal.aborted) return;
        // 410: the revision is older than the log keeps; start over from a listing.
        if ((err as { status?: { code?: number } }).status?.code === 410) resourceVersion = "";
        this.opts.log.warn({ err }, "event expirer watch ended");
      }
      await sleep(this.opts.retryMs ?? 1000, signal);
    }
  }

  private async sweepLoop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await sleep(this.sweepMs, signal);
      if (signal.aborted) return;
      try {
        const n = await this.sweep(signal);
        if (n) this.opts.log.debug({ expired: n, waiting: this.tracked.size }, "events expired");
      } catch (err) {
        if (signal.aborted) return;
        // The api's store is down (Redis): the next sweep tries again.
        this.opts.log.warn({ err }, "event expiry sweep failed");
      }
    }
  }

  async start(signal: AbortSignal): Promise<void> {
    await Promise.all([this.follow(signal), this.sweepLoop(signal)]);
  }
}
