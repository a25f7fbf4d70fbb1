// The newest revision this replica has seen in the event log (through its
// watch cache), and waits on it: the "log" write durability answers a write
// once its revision is in the log — JetStream's copy, which survives the
// loss of Redis (recovery.ts puts it back) and, on a NATS cluster with an R3
// stream, the loss of a NATS server.
//
// The log must hold *this* write at its revision, not merely some write: in a
// Redis split brain (a killed primary restarted as a primary before Sentinel
// demotes it, with another api replica still writing to it) two primaries
// hand out the same revision, one relay's publish wins, and the other write —
// at a revision the log already has — used to be answered as durable and then
// vanished with the demoted primary (the chaos suite's "acknowledged scale
// never acted on"). A write whose revision the log holds for another change is
// refused (503): it was not recorded.
import { ApiError, failure } from "@choreo/kit";
import { Object as ObjectMsg, WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";
import { orAbort, type Runnable } from "@choreo/kit/lifecycle";
import type { WatchCache } from "./watch-cache.js";
import { eventParts, withRevision } from "./event-revision.js";

interface Waiter {
  revision: number;
  /** The change record's event as the store wrote it (revision 0, resourceVersion ""), to check the log's change is this one. */
  written: Uint8Array | undefined;
  resolve(): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout;
}

/** What the watermark reads of a change in the log (a watch cache entry). */
export interface LogChange {
  readonly revision: number;
  /** The change's type. */
  readonly type: string;
  /** The object encoded (ObjectMsg) as the log holds it: with its resourceVersion. */
  readonly bytes: Uint8Array;
  /** The change decoded (read only when the written record is not as the store writes it). */
  readonly event: WatchEvent;
}

export class LogWatermark implements Runnable {
  readonly name = "log-watermark";
  private seen = -1;
  private waiters: Waiter[] = [];

  constructor(
    private readonly cache: Pick<WatchCache, "ready" | "lastRevision"> & {
      since(from: number, signal: AbortSignal): AsyncGenerator<LogChange, "expired" | "aborted">;
    },
    private readonly timeoutMs = 10_000,
  ) {}

  /** Whether it follows the log (from the watch cache's first sync until stopped); before, nothing is waited on. */
  running = false;

  /** The newest revision seen in the log. */
  get revision(): number {
    return this.seen;
  }

  async start(signal: AbortSignal): Promise<void> {
    await orAbort(this.cache.ready, signal);
    this.running = true;
    while (!signal.aborted) {
      this.advance(this.cache.lastRevision);
      // "expired": this follower fell behind the cache's ring (it cannot, unless starved): start again from its newest.
      for await (const ev of this.cache.since(Math.max(this.seen, 0), signal)) this.advance(ev.revision, ev);
    }
    this.running = false;
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(new ApiError(failure(503, "ServiceUnavailable", "the api is shutting down")));
    }
  }

  /**
   * Resolves once `revision` is in the log (at once while not running: the
   * api's own bootstrap writes, before its watch cache and relay start); a
   * 504 Timeout after the timeout (the write is stored; the log has not
   * confirmed it). With `written` (the change record's event as the store
   * wrote it), the log's change at that revision must be this write: another
   * change there → 503, the write was not recorded.
   */
  async reached(revision: number, written?: Uint8Array): Promise<void> {
    if (!this.running) return;
    if (revision <= this.seen) {
      if (written) this.check(revision, written, await this.changeAt(revision));
      return;
    }
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        revision,
        written,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters = this.waiters.filter((x) => x !== w);
          reject(
            new ApiError(
              failure(504, "Timeout", `Timeout: the write (revision ${revision}) was stored but the event log did not confirm it within ${this.timeoutMs} ms`, {
                retryAfterSeconds: 1,
              }),
            ),
          );
        }, this.timeoutMs),
      };
      this.waiters.push(w);
    });
  }

  /** The log's change at `revision`, from the watch cache (undefined: no longer held — not checked). */
  private async changeAt(revision: number): Promise<LogChange | undefined> {
    const ac = new AbortController();
    try {
      for await (const ev of this.cache.since(revision - 1, ac.signal)) return ev.revision === revision ? ev : undefined;
      return undefined;
    } finally {
      ac.abort();
    }
  }

  /** Throws the 503 when the log's change at `revision` is not the write. */
  private check(revision: number, written: Uint8Array, change: LogChange | undefined): void {
    if (!change || sameChange(written, change)) return;
    throw new ApiError(
      failure(
        503,
        "ServiceUnavailable",
        `the write was not recorded: the event log holds another change at its revision ${revision} (the store failed over); read the object and try again`,
        { retryAfterSeconds: 1 },
      ),
    );
  }

  private advance(revision: number, change?: LogChange): void {
    if (revision <= this.seen) return;
    this.seen = revision;
    if (this.waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      if (w.revision <= revision) {
        clearTimeout(w.timer);
        try {
          // The change at the waiter's own revision is the one to compare (revisions come one by one, in order).
          if (w.written && change && change.revision === w.revision) this.check(w.revision, w.written, change);
          w.resolve();
        } catch (err) {
          w.reject(err);
        }
      } else still.push(w);
    }
    this.waiters = still;
  }
}

/**
 * Whether the log's change is the one the store wrote: the same type and the
 * same object, byte for byte, once the written record has the log's revision
 * as the relay writes it in (withRevision: the object's resourceVersion; the
 * log's bytes are the relay's publish, from withRevision or ts-proto's
 * encoder, which give the same bytes). Compared on the wire, without decoding
 * or encoding either; a record withRevision cannot read is compared decoded.
 */
export function sameChange(written: Uint8Array, logged: LogChange): boolean {
  const stamped = withRevision(written, logged.revision);
  const parts = stamped && eventParts(stamped);
  if (!parts) return sameDecoded(written, logged.event);
  return sameAscii(parts.type, logged.type) && Buffer.from(parts.object.buffer, parts.object.byteOffset, parts.object.byteLength).equals(logged.bytes);
}

/** Whether UTF-8 bytes spell `s` (a change type: ASCII; any other character is no match). */
function sameAscii(b: Uint8Array, s: string): boolean {
  if (b.length !== s.length) return false;
  for (let i = 0; i < b.length; i++) if (b[i] !== s.charCodeAt(i) || b[i]! >= 0x80) return false;
  return true;
}

/**
 * sameChange on the decoded forms: the same type and the same object, byte
 * for byte, once the log's resourceVersion (which the relay writes in) is
 * blanked as the store wrote it.
 */
export function sameDecoded(written: Uint8Array, logged: WatchEvent): boolean {
  const w = WatchEvent.decode(written);
  if (w.type !== logged.type || !w.object?.kind || !logged.object?.kind) return w.type === logged.type && !w.object?.kind === !logged.object?.kind;
  const value = logged.object.kind.value;
  // A copy with resourceVersion "" (the decoded event is shared with watchers: not changed in place).
  const blanked = {
    ...logged.object,
    kind: { ...logged.object.kind, value: { ...value, metadata: value.metadata && { ...value.metadata, resourceVersion: "" } } },
  } as ObjectMsg;
  return Buffer.from(ObjectMsg.encode(w.object).finish()).equals(ObjectMsg.encode(blanked).finish());
}
