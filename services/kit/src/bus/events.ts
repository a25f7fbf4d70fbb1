import { jetstream, DeliverPolicy, type JetStreamManager } from "@nats-io/jetstream";
import type { Msg, NatsConnection, Status } from "@nats-io/transport-node";
import { WatchEvent } from "../gen/choreo/api/v1/api.js";
import { expired } from "../api/errors.js";
import { EVENT_STREAM } from "./subjects.js";
import { streamState } from "./stream.js";
import { EVENT_SIGNATURE_HEADER, signedEventsPolicy, type SignedEventsPolicy } from "./signing.js";
import { onAbort, sleep } from "../lifecycle/runnable.js";

/** Encodes a watch event (the payload of every event-log message). */
export function encodeEvent(ev: WatchEvent): Uint8Array {
  return WatchEvent.encode(ev).finish();
}

/** Decodes an event-log message. */
export function decodeEvent(data: Uint8Array): WatchEvent {
  return WatchEvent.decode(data);
}

/** Options of `consumeEvents`. */
export interface ConsumeOptions {
  nc: NatsConnection;
  jsm: JetStreamManager;
  /** One subject filter (NATS 2.9 takes one per consumer). */
  filter: string;
  /** Deliver every change after this revision. */
  fromRevision: number;
  signal: AbortSignal;
  /**
   * Only messages with the api's signature, at the sequence of their revision
   * (others skipped and reported): this policy rather than the connection's
   * (`requireSignedEvents`). The api's store recovery reads the log with it.
   */
  policy?: SignedEventsPolicy;
}

/** Throws a 410 Expired ApiError when the log no longer holds revision `fromRevision`+1. */
export async function checkAnswerable(jsm: JetStreamManager, fromRevision: number): Promise<void> {
  const { firstRevision, lastRevision } = await streamState(jsm);
  // Revision r is still answerable when r+1 is held, or nothing after r exists yet.
  if (fromRevision + 1 < firstRevision && fromRevision < lastRevision) {
    throw expired(`too old resource version: ${fromRevision} (${firstRevision - 1})`);
  }
}

/**
 * The event of a message at stream sequence `seq`, or undefined when the
 * connection requires signed events and this one is not (reported, skipped):
 * no api signature, or a genuine message copied to another place in the log.
 */
export function eventOfMessage(policy: SignedEventsPolicy | undefined, m: Pick<Msg, "data" | "subject" | "headers">, seq: number): WatchEvent | undefined {
  if (policy && !policy.verifier.verify(m.data, m.headers?.get(EVENT_SIGNATURE_HEADER) || undefined)) {
    policy.onRejected?.(m.headers?.get(EVENT_SIGNATURE_HEADER) ? "bad-signature" : "unsigned", m.subject, seq);
    return undefined;
  }
  const ev = decodeEvent(m.data);
  if (policy && ev.revision !== seq) {
    policy.onRejected?.("out-of-place", m.subject, seq);
    return undefined;
  }
  if (!ev.revision) ev.revision = seq;
  return ev;
}

/**
 * Calls `fn` at each reconnection of `nc` to a server; returns the function
 * that stops listening.
 */
export function onReconnect(nc: NatsConnection, fn: () => void): () => void {
  const statuses = nc.status() as AsyncIterable<Status> & { stop?: () => void };
  void (async () => {
    for await (const s of statuses) if (s.type === "reconnect") fn();
  })().catch(() => undefined);
  return () => statuses.stop?.();
}

/**
 * The idle heartbeat a consumer's server sends while nothing is delivered;
 * two missed and the consumer is made again (its server died, the
 * connection to another stayed up). nats.js's default is half the pull's
 * 30 s expiry: 30 s and more without events after a NATS cluster member died.
 */
export const CONSUMER_HEARTBEAT_MS = 2_000;

/**
 * Every change after `fromRevision` matching `filter`, in revision order,
 * then live changes until the signal aborts. Throws a 410 Expired ApiError
 * when the log no longer holds revision fromRevision+1. On a connection that
 * requires signed events (`requireSignedEvents`), a message without the
 * api's signature, or not at the sequence of its revision, is skipped.
 * When the connection comes back after losing its server (a nats-server
 * restart), the consumer starts again after the last message it delivered:
 * nats.js's own pull consumer only notices that its consumer and pull died
 * with the server once the pull expires and heartbeats are missed (30 s and
 * more, longer on a quiet subject). On a NATS cluster the consumer (one
 * replica) lives on one server, not always the one connected to: when that
 * server dies the connection stays up and only the consumer's idle
 * heartbeats stop. Two missed (every CONSUMER_HEARTBEAT_MS) start it again
 * the same way, on a server that runs.
 */
export function consumeEvents(opts: ConsumeOptions): AsyncGenerator<WatchEvent> {
  return consume(opts, (event) => event);
}

/** A change of the log with its message's bytes: the encoded WatchEvent as published (the payload; a view, not a copy). */
export interface EventRecord {
  event: WatchEvent;
  data: Uint8Array;
}

/**
 * `consumeEvents`, each change handed out with its message's bytes: a reader
 * that keeps the object encoded (the api's watch cache) takes its bytes from
 * the message instead of encoding the decoded object again. `data` is the
 * message's payload, which may be a view of a larger buffer of the
 * connection: copy what is kept.
 */
export function consumeEventRecords(opts: ConsumeOptions): AsyncGenerator<EventRecord> {
  return consume(opts, (event, data) => ({ event, data }));
}

async function* consume<T>(opts: ConsumeOptions, pick: (event: WatchEvent, data: Uint8Array) => T): AsyncGenerator<T> {
  await checkAnswerable(opts.jsm, opts.fromRevision);
  const js = jetstream(opts.nc);
  const policy = opts.policy ?? signedEventsPolicy(opts.nc);
  /** The stream sequence of the last message seen. */
  let seen = opts.fromRevision;
  for (let attempt = 0; !opts.signal.aborted; attempt++) {
    let consumer;
    try {
      consumer = await js.consumers.get(EVENT_STREAM, {
        filter_subjects: opts.filter,
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: seen + 1,
      });
    } catch (err) {
      // Right after a reconnection JetStream may not answer yet: a few more tries, then the caller's retry.
      if (attempt === 0 || attempt > 20) throw err;
      await sleep(500, opts.signal);
      continue;
    }
    const messages = await consumer.consume({ max_messages: 512, idle_heartbeat: CONSUMER_HEARTBEAT_MS });
    let reconnected = false;
    void (async () => {
      for await (const s of messages.status()) {
        if (s.type !== "heartbeats_missed") continue;
        reconnected = true;
        void messages.close();
        return;
      }
    })().catch(() => undefined);
    // The signal may have aborted while the consumer was being made: then stop at once.
    const unlisten = onAbort(opts.signal, () => void messages.close());
    const stopWatching = onReconnect(opts.nc, () => {
      reconnected = true;
      void messages.close();
    });
    try {
      for await (const m of messages) {
        if (opts.signal.aborted) break;
        seen = m.seq;
        const ev = eventOfMessage(policy, m, m.seq);
        if (ev) yield pick(ev, m.data);
      }
    } finally {
      stopWatching();
      unlisten();
      await messages.close();
      // Gone at once: nats.js leaves an ordered consumer to the server's 5-minute inactivity reaper, and nats-server 2.9 tests every stored message against every consumer's filter meanwhile.
      void consumer.delete().catch(() => undefined);
    }
    if (!reconnected) return;
    attempt = 0;
  }
}
