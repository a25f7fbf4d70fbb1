import { jetstream, DeliverPolicy, type JetStreamManager } from "@nats-io/jetstream";
import type { Msg, NatsConnection, Status } from "@nats-io/transport-node";
import type { WatchEvent } from "../gen/choreo/api/v1/api.js";
import { isExpired } from "../api/errors.js";
import { onAbort, sleep } from "../lifecycle/runnable.js";
import { checkAnswerable, consumeEvents, eventOfMessage } from "./events.js";
import { signedEventsPolicy } from "./signing.js";
import { EVENT_STREAM, liveSubjectOf } from "./subjects.js";
import { hasPodRepublish } from "./stream.js";

/** Options of `followEvents`. */
export interface FollowOptions {
  nc: NatsConnection;
  jsm: JetStreamManager;
  /** A pod filter of the event log (`podsOnNodeFilter(node)`): what is republished live. */
  filter: string;
  /**
   * Deliver every change after this revision; or a list to make once the
   * live subscription is the server's, returning its revision: then nothing
   * needs catching up from the log at start (every change after the list
   * arrives live), which spares the JetStream API one consumer per node when
   * thousands of node agents start at once. The list is made again after
   * each reconnection, in place of a catch-up from the log.
   */
  fromRevision: number | (() => Promise<number>);
  signal: AbortSignal;
  /** Called once when the stream has no RePublish and the follower reads the log through a consumer instead. */
  onFallback?: () => void;
  /** Called when the connection is lost or back (`up`), and once a catch-up from the log after `after` delivered `delivered` changes. */
  onConnection?: (up: boolean) => void;
  onCaughtUp?: (after: number, delivered: number) => void;
  /**
   * The change at this revision when the follower already holds it — its own write, as the api answered it:
   * a message at that sequence (live or caught up from the log) is then taken as that change, neither
   * verified nor decoded (what is delivered is the api's answer, not the message's content). Undefined:
   * every message is read.
   */
  known?: (revision: number) => WatchEvent | undefined;
}

/** Whether the stream republishes, asked once per connection (a stream's RePublish cannot change). */
const republishing = new WeakMap<NatsConnection, Promise<boolean>>();
function republishes(nc: NatsConnection, jsm: JetStreamManager): Promise<boolean> {
  let p = republishing.get(nc);
  if (!p) {
    p = hasPodRepublish(jsm);
    republishing.set(nc, p);
    // A failed question is asked again next time.
    p.catch(() => republishing.delete(nc));
  }
  return p;
}

/** Calls `fn(false)` when `nc` loses its server and `fn(true)` when it is back; returns the function that stops listening. */
function onConnectionChange(nc: NatsConnection, fn: (up: boolean) => void): () => void {
  const statuses = nc.status() as AsyncIterable<Status> & { stop?: () => void };
  void (async () => {
    for await (const s of statuses) if (s.type === "disconnect" || s.type === "reconnect") fn(s.type === "reconnect");
  })().catch(() => undefined);
  return () => statuses.stop?.();
}

/**
 * How many followers of one connection catch up from the log at once. A catch-up is a JetStream consumer
 * the server makes by scanning the stream for the follower's filter; after a reconnection every follower
 * of the process catches up. 5,000 hollow nodes' 5,000 consumers at once (a 60 s stall of their process,
 * 20,000 pods) kept nats-server 2.9 busy with them for minutes while the connection's other requests, the
 * leases among them, waited behind them and timed out: the process never recovered. In turns, the
 * catch-ups share the server with everything else.
 */
export const CATCH_UP_CONCURRENCY = 8;

/** A connection's catch-up turns: FIFO, at most CATCH_UP_CONCURRENCY at once. */
class CatchUpTurns {
  running = 0;
  /** The most that ran at once (tests). */
  most = 0;
  private readonly waiting: (() => void)[] = [];

  /** Resolves true once it is this caller's turn, false when `signal` aborted first (nothing to release then). */
  take(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    if (this.running < CATCH_UP_CONCURRENCY) return Promise.resolve(this.start());
    return new Promise<boolean>((resolve) => {
      const go = (): void => {
        signal.removeEventListener("abort", giveUp);
        resolve(this.start());
      };
      const giveUp = (): void => {
        const i = this.waiting.indexOf(go);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(false);
      };
      this.waiting.push(go);
      signal.addEventListener("abort", giveUp, { once: true });
    });
  }

  done(): void {
    this.running--;
    this.waiting.shift()?.();
  }

  get queued(): number {
    return this.waiting.length;
  }

  private start(): true {
    this.running++;
    this.most = Math.max(this.most, this.running);
    return true;
  }
}

const catchUpTurns = new WeakMap<NatsConnection, CatchUpTurns>();
function turnsOf(nc: NatsConnection): CatchUpTurns {
  let t = catchUpTurns.get(nc);
  if (!t) catchUpTurns.set(nc, (t = new CatchUpTurns()));
  return t;
}

/** The catch-ups of `nc`'s followers: running now, waiting for a turn, and the most that ran at once. */
export function catchUpsOf(nc: NatsConnection): { running: number; waiting: number; most: number } {
  const t = catchUpTurns.get(nc);
  return { running: t?.running ?? 0, waiting: t?.queued ?? 0, most: t?.most ?? 0 };
}

/** A republished message's stream sequence (its revision). */
function sequenceOf(m: Msg): number {
  return Number(m.headers?.get("Nats-Sequence") ?? 0);
}

/**
 * The same changes as `consumeEvents(filter, fromRevision)` — every change
 * after `fromRevision` matching `filter`, in revision order, exactly once,
 * then live ones — but read live from the core-NATS subjects the stream
 * republishes pod changes to (`LIVE_PREFIX`), so that nats-server's cost of
 * an event does not grow with the number of followers. The event log is read
 * only to catch up, through an ordered consumer that is deleted as soon as
 * it has delivered what the log held:
 *
 * 1. subscribe to the live subject and flush (the server now routes every
 *    change stored from here on to it; they queue up);
 * 2. catch up from the log after the last revision delivered, until the
 *    consumer has nothing pending (everything stored before 1 is delivered)
 *    — or, given a list to make (`fromRevision` a function), list now: what
 *    changes after the list's revision is stored after 1, so arrives live;
 * 3. deliver the queued and following live messages whose revision is
 *    newer than the last delivered (those 2 delivered too are dropped).
 *
 * Core NATS loses messages only with the connection (a nats-server restart,
 * a network cut, the server closing a slow consumer): at each reconnection
 * the follower catches up again from the log (2) — or, given a list to
 * make, lists again — so nothing is lost and nothing delivered twice. A revision the log no longer holds throws 410
 * Expired (the caller relists). Signed-events policy as `consumeEvents`.
 * On a stream without the RePublish (made before it) it is `consumeEvents`.
 */
export async function* followEvents(opts: FollowOptions): AsyncGenerator<WatchEvent> {
  const live = liveSubjectOf(opts.filter);
  if (!live || !(await republishes(opts.nc, opts.jsm))) {
    opts.onFallback?.();
    const fromRevision = typeof opts.fromRevision === "number" ? opts.fromRevision : await opts.fromRevision();
    yield* consumeEvents({ ...opts, fromRevision });
    return;
  }
  const listFirst = typeof opts.fromRevision === "function" ? opts.fromRevision : undefined;
  if (typeof opts.fromRevision === "number") await checkAnswerable(opts.jsm, opts.fromRevision);
  const policy = signedEventsPolicy(opts.nc);
  let seen = typeof opts.fromRevision === "number" ? opts.fromRevision : 0;
  let queued: Msg[] = [];
  let wake: (() => void) | undefined;
  const nudge = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  let catchUp = true;
  let failures = 0;
  let caughtUpOnce = false;
  /** Ends the catch-up under way (a reconnection while catching up: it starts again). */
  let cut = new AbortController();
  const sub = opts.nc.subscribe(live, {
    callback: (err, m) => {
      if (err) return;
      queued.push(m);
      nudge();
    },
  });
  // A live message can be lost from the disconnection on: catch up again (from the last delivered revision).
  let connected = true;
  const stopWatching = onConnectionChange(opts.nc, (up) => {
    opts.onConnection?.(up);
    connected = up;
    catchUp = true;
    cut.abort();
    nudge();
  });
  const unlisten = onAbort(opts.signal, nudge);
  try {
    await opts.nc.flush();
    if (listFirst) {
      // The subscription is the server's: every change after the list's revision reaches it.
      seen = await listFirst();
      catchUp = false;
      caughtUpOnce = true;
    }
    while (!opts.signal.aborted) {
      if (catchUp && !connected) {
        // Catch up once the server is back (the subscription is re-made with the connection).
        await new Promise<void>((r) => (wake = r));
        continue;
      }
      if (catchUp) {
        catchUp = false;
        cut = new AbortController();
        const turns = turnsOf(opts.nc);
        const ending = AbortSignal.any([opts.signal, cut.signal]);
        // Cut meanwhile (a reconnection: catchUp is set again) or ended: no turn taken.
        if (!(await turns.take(ending))) continue;
        try {
          const after = seen;
          let delivered = -1;
          try {
            // The subscription is the server's (again, after a reconnection) before catching up.
            await opts.nc.flush();
            if (listFirst) {
              // A caller that lists lists again, as at the start: the api answers it from its cache, where a
              // consumer per follower is the server's scan of the stream (5,000 hollow nodes back from a stall
              // caught up at ~10 a second through consumers).
              seen = await listFirst();
            } else {
              delivered = 0;
              for await (const ev of catchUpFromLog(opts, seen, ending)) {
                seen = ev.revision;
                delivered++;
                yield ev;
              }
            }
          } finally {
            // Also when the caller stops reading mid-way (the generator returned at the yield).
            turns.done();
          }
          if (caughtUpOnce && delivered >= 0) opts.onCaughtUp?.(after, delivered);
          failures = 0;
          caughtUpOnce = true;
        } catch (err) {
          // Right after a reconnection JetStream may not answer yet: more tries while connected, then the caller's retry (a relist).
          if (isExpired(err) || !caughtUpOnce || (connected && ++failures > 20)) throw err;
          catchUp = true;
          await sleep(500, opts.signal);
        }
        continue;
      }
      if (queued.length === 0) {
        await new Promise<void>((r) => (wake = r));
        continue;
      }
      const batch = queued;
      queued = [];
      for (const m of batch) {
        // The rest is in the log, after the last revision delivered: the catch-up delivers it.
        if (catchUp) break;
        const seq = sequenceOf(m);
        if (seq <= seen) continue;
        seen = seq;
        const ev = opts.known?.(seq) ?? eventOfMessage(policy, m, seq);
        if (ev) yield ev;
        if (opts.signal.aborted) return;
      }
    }
  } finally {
    stopWatching();
    unlisten();
    sub.unsubscribe();
  }
}

/**
 * Every change of the log after `after` matching the filter, until the
 * consumer has none pending; stops early when `signal` aborts (the caller's
 * end, or a reconnection while catching up: the caller starts again).
 */
async function* catchUpFromLog(opts: FollowOptions, after: number, signal: AbortSignal): AsyncGenerator<WatchEvent> {
  await checkAnswerable(opts.jsm, after);
  const policy = signedEventsPolicy(opts.nc);
  const consumer = await jetstream(opts.nc).consumers.get(EVENT_STREAM, {
    filter_subjects: opts.filter,
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: after + 1,
    // Reaped by the server soon if this process dies before deleting it.
    inactive_threshold: 30_000,
  });
  try {
    if ((await consumer.info(true)).num_pending === 0) return;
    const messages = await consumer.consume({ max_messages: 512 });
    const unlisten = onAbort(signal, () => void messages.close());
    try {
      for await (const m of messages) {
        if (signal.aborted) return;
        const ev = opts.known?.(m.seq) ?? eventOfMessage(policy, m, m.seq);
        if (ev) yield ev;
        if (m.info.pending === 0) return;
      }
    } finally {
      unlisten();
      await messages.close();
    }
  } finally {
    void consumer.delete().catch(() => undefined);
  }
}
