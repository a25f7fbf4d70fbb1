// test-tier: servers
// openBusStream against answers written by hand over a real nats-server:
// an ack connects the stream, an error reply is thrown as its Status,
// silence and a foreign reply are 503 and 500.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createInbox, type NatsConnection } from "@nats-io/transport-node";
import { ApiError, badRequest } from "../api/errors.js";
import { startNats, waitFor, type ServerHandle } from "../process/index.js";
import { BusStream, encodeStreamStatus, STREAM_INBOX_HEADER, StreamFrame, streamFrameHeaders } from "./bus-stream.js";
import { openBusStream } from "./open-stream.js";
import { connectBus } from "./stream.js";

async function rejectsWith(p: Promise<unknown>, code: number, message: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.code, code);
    assert.equal(err.message, message);
    return true;
  });
}

describe("openBusStream", () => {
  let nats: ServerHandle;
  let a: NatsConnection;
  let b: NatsConnection;

  before(async () => {
    nats = await startNats();
    a = await connectBus(nats.url, "opener");
    b = await connectBus(nats.url, "answerer");
  });
  after(async () => {
    await a.close();
    await b.close();
    await nats.stop();
  });

  it("connects to the inbox the ack names, with the request carrying the opener's inbox", async () => {
    const answered: BusStream[] = [];
    const sub = b.subscribe("svc.open", {
      callback: (_e, m) => {
        const remote = new TextDecoder().decode(m.data);
        const s = new BusStream({ nc: b, local: createInbox(), remote });
        answered.push(s);
        const h = streamFrameHeaders(StreamFrame.Ack);
        h.set(STREAM_INBOX_HEADER, s.localInbox);
        m.respond(new Uint8Array(), { headers: h });
        void s.send(1, new TextEncoder().encode("hello")).then(() => s.end());
      },
    });
    await b.flush();
    const stream = await openBusStream(a, "svc.open", (inbox) => new TextEncoder().encode(inbox), { peer: "the service" });
    const got: string[] = [];
    for await (const ev of stream.events()) got.push(ev.kind === "data" ? `${ev.channel}:${new TextDecoder().decode(ev.data)}` : ev.kind);
    assert.deepEqual(got, ["1:hello", "end"]);
    stream.close();
    for (const s of answered) s.close();
    sub.unsubscribe();
  });

  it("throws the Status of an error reply, 503 without an answer, 500 on a foreign reply", async () => {
    const sub = b.subscribe("svc.refuse", {
      callback: (_e, m) => void m.respond(encodeStreamStatus(badRequest("no such container").status), { headers: streamFrameHeaders(StreamFrame.Error) }),
    });
    const odd = b.subscribe("svc.odd", { callback: (_e, m) => void m.respond(new TextEncoder().encode("hi")) });
    await b.flush();
    const encode = (inbox: string): Uint8Array => new TextEncoder().encode(inbox);
    await rejectsWith(openBusStream(a, "svc.refuse", encode, { peer: "the service" }), 400, "no such container");
    await rejectsWith(openBusStream(a, "svc.nobody", encode, { peer: "the service", timeoutMs: 1_000 }), 503, "the service is not answering");
    await rejectsWith(openBusStream(a, "svc.odd", encode, { peer: "the service" }), 500, "Internal error occurred: the service sent an unexpected reply");
    sub.unsubscribe();
    odd.unsubscribe();
  });

  it("tells the peer when the opener's signal fires, also while the request was under way", async () => {
    const answered: BusStream[] = [];
    const early = new AbortController();
    const sub = b.subscribe("svc.slow", {
      callback: (_e, m) => {
        const s = new BusStream({ nc: b, local: createInbox(), remote: new TextDecoder().decode(m.data) });
        answered.push(s);
        // The opener gives up before the ack arrives.
        early.abort();
        const h = streamFrameHeaders(StreamFrame.Ack);
        h.set(STREAM_INBOX_HEADER, s.localInbox);
        void b.flush().then(() => m.respond(new Uint8Array(), { headers: h }));
      },
    });
    await b.flush();
    const encode = (inbox: string): Uint8Array => new TextEncoder().encode(inbox);
    const first = await openBusStream(a, "svc.slow", encode, { peer: "the service", signal: early.signal });
    assert.equal(first.signal.aborted, true);
    await waitFor(async () => answered[0]?.why === "aborted");
    first.close();
    const later = new AbortController();
    const second = await openBusStream(a, "svc.slow", encode, { peer: "the service", signal: later.signal });
    assert.equal(second.signal.aborted, false);
    later.abort();
    await waitFor(async () => answered[1]?.why === "aborted");
    assert.equal(second.why, "shutdown");
    second.close();
    for (const s of answered) s.close();
    sub.unsubscribe();
  });
});
