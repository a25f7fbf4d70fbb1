import { setMaxListeners } from "node:events";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { BusStream, encodeStreamStatus, newInbox, STREAM_INBOX_HEADER, StreamFrame, streamFrameHeaders, type BusStreamOptions } from "@choreo/kit/bus";
import type { Status } from "@choreo/kit";
import type { Logger } from "@choreo/kit/log";

/**
 * The request loop of the agent's stream servers: answers each request on
 * `subject` with `serve` (concurrently), until `outer` aborts; then aborts the
 * streams still open (their `signal`) and waits for them to finish.
 */
export async function serveRequests(
  nc: NatsConnection,
  subject: string,
  outer: AbortSignal,
  log: Logger,
  serve: (msg: Msg, signal: AbortSignal) => Promise<void>,
): Promise<void> {
  const sub = nc.subscribe(subject);
  const ac = new AbortController();
  // Every open stream listens to this one signal: no listener limit.
  setMaxListeners(0, ac.signal);
  const stop = (): void => {
    sub.unsubscribe();
    ac.abort();
  };
  if (outer.aborted) stop();
  outer.addEventListener("abort", stop, { once: true });
  log.info({ subject }, "stream server listening");
  const open = new Set<Promise<void>>();
  for await (const msg of sub) {
    const p = serve(msg, ac.signal).catch((err: unknown) => log.warn({ err }, "stream request failed"));
    open.add(p);
    void p.finally(() => open.delete(p));
  }
  await Promise.allSettled([...open]);
  outer.removeEventListener("abort", stop);
}

/** Answers a stream request with the Status saying why it was not opened. */
export function replyStreamError(msg: Msg, status: Status): void {
  msg.respond(encodeStreamStatus(status), { headers: streamFrameHeaders(StreamFrame.Error) });
}

/** Opens this side of a requested stream towards `remote` and acks the request with its inbox. */
export function acceptStream(msg: Msg, o: Omit<BusStreamOptions, "local"> & { remote: string }): BusStream {
  const stream = new BusStream({ ...o, local: newInbox(o.nc) });
  const ack = streamFrameHeaders(StreamFrame.Ack);
  ack.set(STREAM_INBOX_HEADER, stream.localInbox);
  msg.respond(new Uint8Array(), { headers: ack });
  return stream;
}
