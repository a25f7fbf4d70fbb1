// The newest revision this replica has seen in the event log (through its
// watch cache), and waits on it: the "log" write durability answers a write
// once its revision is in the log — JetStream's copy, which survives the
// loss of Redis (recovery.ts puts it back) and, on a NATS cluster with an R3
// stream, the loss of a NATS server.
import { ApiError, failure } from "@choreo/kit";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { WatchCache } from "./watch-cache.js";

interface Waiter {
  revision: number;
  resolve(): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout;
}

export class LogWatermark implements Runnable {
  readonly name = "log-watermark";
  private seen = -1;
  private waiters: Waiter[] = [];

  constructor(
    private readonly cache: Pick<WatchCache, "ready" | "lastRevision" | "since">,
    private readonly timeoutMs = 10_000,
  ) {}

  /** Whether it follows the log (from the watch cache's first sync until stopped); before, nothing is waited on. */
  running = false;

  /** The newest revision seen in the log. */
  get revision(): number {
    return this.seen;
  }

  async start(signal: AbortSignal): Promise<void> {
    await this.cache.ready;
    this.running = true;
    while (!signal.aborted) {
      this.advance(this.cache.lastRevision);
      // "expired": this follower fell behind the cache's ring (it cannot, unless starved): start again from its newest.
      for await (const ev of this.cache.since(Math.max(this.seen, 0), signal)) this.advance(ev.revision);
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
   * confirmed it).
   */
  reached(revision: number): Promise<void> {
    if (revision <= this.seen || !this.running) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        revision,
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

  private advance(revision: number): void {
    if (revision <= this.seen) return;
    this.seen = revision;
    if (this.waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      if (w.revision <= revision) {
        clearTimeout(w.timer);
        w.resolve();
      } else still.push(w);
    }
    this.waiters = still;
  }
}
