/**
 * The opening of a {@link BusStream} by the side that asks (the api): its
 * request names its own inbox, the answer is an ack naming the other side's
 * inbox in `Choreo-Stream-Inbox`, or an error frame carrying a Status.
 *
 *   opener ──request <subject> (encode(inbox))──────────────▶ answerer
 *   opener ◀──reply: "ack" + Choreo-Stream-Inbox | "error" (Status)
 */
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { internal, unavailable } from "../api/errors.js";
import { BusStream, decodeStreamError, newInbox, STREAM_INBOX_HEADER, StreamFrame, streamFrameOf, type BusStreamOptions } from "./bus-stream.js";

/** Options of {@link openBusStream}. */
export interface OpenBusStreamOptions extends Pick<BusStreamOptions, "heartbeatMs" | "idleTimeoutMs" | "window" | "signal"> {
  /** Who answers, as errors name it (e.g. `node agent for node n1`). */
  peer: string;
  /** How long the answering side has to accept (default 5 s). */
  timeoutMs?: number;
}

/**
 * Opens a bus stream: requests `subject` with `encode(local inbox)` and
 * connects to the inbox the ack names. Throws the Status of an error reply,
 * a 503 `<peer> is not answering` when nobody answers in time, a 500 on any
 * other reply; the stream is released then. `signal` (the opener's own
 * end, e.g. its HTTP client left) aborts the stream and tells the peer, also
 * when it fired while the request was under way.
 */
export async function openBusStream(nc: NatsConnection, subject: string, encode: (inbox: string) => Uint8Array, o: OpenBusStreamOptions): Promise<BusStream> {
  const { peer, timeoutMs, signal, ...streamOpts } = o;
  // `signal` is wired once the peer is known: aborted earlier, the stream could not tell it.
  const stream = new BusStream({ ...streamOpts, nc, local: newInbox(nc) });
  try {
    let reply: Msg;
    try {
      reply = await nc.request(subject, encode(stream.localInbox), { timeout: timeoutMs ?? 5_000 });
    } catch {
      // No responders or no answer in time: the answering side is down, or there is none.
      throw unavailable(`${peer} is not answering`);
    }
    const kind = streamFrameOf(reply);
    if (kind === StreamFrame.Error) throw decodeStreamError(reply.data);
    const remote = reply.headers?.get(STREAM_INBOX_HEADER);
    if (kind !== StreamFrame.Ack || !remote) throw internal(`${peer} sent an unexpected reply`);
    stream.connect(remote);
    if (signal?.aborted) stream.abort(undefined, "shutdown");
    else if (signal) {
      const onAbort = (): void => stream.abort(undefined, "shutdown");
      signal.addEventListener("abort", onAbort, { once: true });
      stream.signal.addEventListener("abort", () => signal.removeEventListener("abort", onAbort), { once: true });
    }
    return stream;
  } catch (err) {
    stream.close();
    throw err;
  }
}
