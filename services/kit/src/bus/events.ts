import { jetstream, DeliverPolicy, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { WatchEvent } from "../gen/choreo/api/v1/api.js";
import { expired } from "../api/errors.js";
import { EVENT_STREAM } from "./subjects.js";
import { streamState } from "./stream.js";
import { EVENT_SIGNATURE_HEADER, signedEventsPolicy } from "./signing.js";
import { onAbort } from "../lifecycle/runnable.js";

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
}

/**
 * Every change after `fromRevision` matching `filter`, in revision order,
 * then live changes until the signal aborts. Throws a 410 Expired ApiError
 * when the log no longer holds revision fromRevision+1. On a connection that
 * requires signed events (`requireSignedEvents`), a message without the
 * api's signature, or not at the sequence of its revision, is skipped.
 */
export async function* consumeEvents(opts: ConsumeOptions): AsyncGenerator<WatchEvent> {
  const { firstRevision, lastRevision } = await streamState(opts.jsm);
  // Revision r is still answerable when r+1 is held, or nothing after r exists yet.
  if (opts.fromRevision + 1 < firstRevision && opts.fromRevision < lastRevision) {
    throw expired(`too old resource version: ${opts.fromRevision} (${firstRevision - 1})`);
  }
  if (opts.signal.aborted) return;
  const js = jetstream(opts.nc);
  const consumer = await js.consumers.get(EVENT_STREAM, {
    filter_subjects: opts.filter,
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: opts.fromRevision + 1,
  });
  const messages = await consumer.consume({ max_messages: 512 });
  const policy = signedEventsPolicy(opts.nc);
  // The signal may have aborted while the consumer was being made: then stop at once.
  const unlisten = onAbort(opts.signal, () => void messages.close());
  try {
    for await (const m of messages) {
      if (opts.signal.aborted) break;
      if (policy && !policy.verifier.verify(m.data, m.headers?.get(EVENT_SIGNATURE_HEADER) || undefined)) {
        policy.onRejected?.(m.headers?.get(EVENT_SIGNATURE_HEADER) ? "bad-signature" : "unsigned", m.subject, m.seq);
        continue;
      }
      const ev = decodeEvent(m.data);
      if (policy && ev.revision !== m.seq) {
        // A genuine message copied to another place in the log (replayed).
        policy.onRejected?.("out-of-place", m.subject, m.seq);
        continue;
      }
      if (!ev.revision) ev.revision = m.seq;
      yield ev;
    }
  } finally {
    unlisten();
    await messages.close();
  }
}
