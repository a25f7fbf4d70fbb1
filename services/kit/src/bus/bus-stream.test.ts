// test-tier: servers
// BusStream between two connections over a real nats-server: order, channels,
// half-close, the final Status, credit in both directions, abort and idleness.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createInbox, type NatsConnection } from "@nats-io/transport-node";
import { badRequest } from "../api/errors.js";
import { startNats, waitFor, type ServerHandle } from "../process/index.js";
import { BusStream, STREAM_CHUNK_BYTES, STREAM_SEQ_HEADER, StreamFrame, streamFrameHeaders, type StreamEvent } from "./bus-stream.js";
import { connectBus } from "./stream.js";

/**
 * Two connected sides on two connections (as the api and an agent). Each
 * side's subscriptions reach the server before the other learns its inbox
 * (the agent's ack follows its subscription on the same connection).
 */
async function pair(
  a: NatsConnection,
  b: NatsConnection,
  opts: { window?: number; heartbeatMs?: number; idleTimeoutMs?: number } = {},
): Promise<[BusStream, BusStream]> {
  const left = new BusStream({ nc: a, local: createInbox(), ...opts });
  await a.flush();
  const right = new BusStream({ nc: b, local: createInbox(), remote: left.localInbox, ...opts });
  await b.flush();
  left.connect(right.localInbox);
  return [left, right];
}

describe("bus stream", () => {
  let nats: ServerHandle;
  let a: NatsConnection;
  let b: NatsConnection;

  before(async () => {
    nats = await startNats();
    a = await connectBus(nats.url, "left");
    b = await connectBus(nats.url, "right");
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await nats?.stop();
  });

  it("carries channels in order, splits large chunks, half-closes a channel and ends with a Status", async () => {
    const [left, right] = await pair(a, b);
    const got: StreamEvent[] = [];
    const reading = (async () => {
      for await (const ev of right.events()) got.push(ev);
    })();
    const big = new Uint8Array(STREAM_CHUNK_BYTES * 2 + 5).map((_, i) => i % 251);
    assert.equal(await left.send(1, new TextEncoder().encode("out")), true);
    assert.equal(await left.send(2, big), true);
    left.closeChannel(0);
    left.end(badRequest("the end").status);
    await reading;
    assert.deepEqual(
      got.map((e) => (e.kind === "data" ? `${e.channel}:${e.data.length}` : e.kind === "close" ? `close ${e.channel}` : `end ${e.status?.message}`)),
      ["1:3", `2:${STREAM_CHUNK_BYTES}`, `2:${STREAM_CHUNK_BYTES}`, "2:5", "close 0", "end the end"],
    );
    const joined = Buffer.concat(got.filter((e) => e.kind === "data" && e.channel === 2).map((e) => (e as { data: Uint8Array }).data));
    assert.deepEqual(new Uint8Array(joined), big);
    left.close();
    right.close();
  });

  it("a sender stops at the window until its reader consumes, in both directions", async () => {
    const window = 4;
    const [left, right] = await pair(a, b, { window });
    for (const [from, to] of [
      [left, right],
      [right, left],
    ] as const) {
      let sent = 0;
      const sending = (async () => {
        for (let i = 0; i < 12; i++) {
          assert.equal(await from.send(1, new Uint8Array([i])), true);
          sent++;
        }
      })();
      // Nobody reads yet: the sender stops after `window` frames.
      await waitFor(async () => sent === window, { timeoutMs: 10_000, message: "window frames sent" });
      await new Promise((r) => setImmediate(r));
      assert.equal(sent, window, "no frame beyond the window without credit");
      const got: number[] = [];
      const it = to.events();
      while (got.length < 12) {
        const r = await it.next();
        assert.ok(!r.done && r.value.kind === "data");
        got.push(r.value.data[0]!);
      }
      await sending;
      assert.deepEqual(got, [...Array(12).keys()]);
      await it.return(undefined);
    }
    left.close();
    right.close();
  });

  it("an abort reaches the peer with its Status and stops both sides' sends", async () => {
    const [left, right] = await pair(a, b, { window: 1 });
    const reading = (async () => {
      const evs: StreamEvent[] = [];
      for await (const ev of right.events()) evs.push(ev);
      return evs;
    })();
    right.abort(badRequest("gone").status);
    await waitFor(async () => left.signal.aborted, { timeoutMs: 10_000, message: "left aborted" });
    assert.equal(left.why, "aborted");
    assert.equal(left.abortStatus?.message, "gone");
    assert.equal(await left.send(1, new Uint8Array([1])), false);
    assert.deepEqual(await reading, []);
    left.close();
    right.close();
  });

  it("a side whose peer went silent stops (idle) and an outer signal aborts the stream and tells the peer", async () => {
    const ac = new AbortController();
    const left = new BusStream({ nc: a, local: createInbox(), heartbeatMs: 50, idleTimeoutMs: 400 });
    // A peer that never answers: an inbox nobody reads.
    left.connect(createInbox());
    await waitFor(async () => left.signal.aborted, { timeoutMs: 10_000, message: "left gave up" });
    assert.equal(left.why, "idle");
    left.close();

    const x = new BusStream({ nc: a, local: createInbox(), signal: ac.signal, heartbeatMs: 50, idleTimeoutMs: 10_000 });
    const y = new BusStream({ nc: b, local: createInbox(), remote: x.localInbox, heartbeatMs: 50, idleTimeoutMs: 10_000 });
    await b.flush();
    x.connect(y.localInbox);
    ac.abort();
    assert.equal(x.why, "shutdown");
    await waitFor(async () => y.signal.aborted, { timeoutMs: 10_000, message: "the peer heard the abort" });
    assert.equal(y.why, "aborted");
    x.close();
    y.close();
  });

  it("a frame the bus lost (a gap in the numbering) stops the stream on both sides with a Status saying so", async () => {
    const [left, right] = await pair(a, b);
    const got: StreamEvent[] = [];
    const reading = (async () => {
      for await (const ev of right.events()) got.push(ev);
    })();
    assert.equal(await left.send(1, new TextEncoder().encode("one")), true);
    await waitFor(() => got.length === 1, { timeoutMs: 5_000, message: "the first frame" });
    // Frame 2 never arrives: what would follow a nats-server restart that dropped it.
    const h = streamFrameHeaders(StreamFrame.Data, 1);
    h.set(STREAM_SEQ_HEADER, "3");
    a.publish(right.localInbox, new TextEncoder().encode("three"), { headers: h });
    await reading;
    assert.equal(got.length, 1, "nothing after the hole is handed on");
    assert.equal(right.why, "lost");
    assert.match(right.abortStatus?.message ?? "", /the bus lost frames of this stream \(frame 3 came when 2 was due\)/);
    await waitFor(() => left.why === "aborted", { timeoutMs: 5_000, message: "the sender is told" });
    assert.match(left.abortStatus?.message ?? "", /lost frames/);
    left.close();
    right.close();
  });

  it("a bus outage stops the streams on both sides with a 503 (what was in flight may be gone); new streams work once it is back", async () => {
    const own = await startNats();
    const x = await connectBus(own.url, "left");
    const y = await connectBus(own.url, "right");
    try {
      const [left, right] = await pair(x, y);
      assert.equal(await left.send(1, new TextEncoder().encode("before")), true);
      await own.kill();
      await waitFor(() => left.why === "lost" && right.why === "lost", { timeoutMs: 10_000, message: "both sides stopped" });
      assert.equal(right.abortStatus?.code, 503);
      assert.match(right.abortStatus?.message ?? "", /the connection to the bus dropped/);
      assert.equal(await left.send(1, new TextEncoder().encode("after")), false, "nothing more is sent");
      left.close();
      right.close();
      await own.restart();
      // Both connections reconnect on their own schedules (jittered backoff): a flush on
      // one that has not yet reconnected fails with "connection disconnected".
      const flushes = (nc: NatsConnection) =>
        nc.flush().then(
          () => true,
          () => false,
        );
      await waitFor(async () => !x.isClosed() && !y.isClosed() && (await flushes(x)) && (await flushes(y)), {
        timeoutMs: 20_000,
        message: "both reconnected",
      });
      const [l2, r2] = await pair(x, y);
      const got: StreamEvent[] = [];
      const reading = (async () => {
        for await (const ev of r2.events()) got.push(ev);
      })();
      assert.equal(await l2.send(1, new TextEncoder().encode("again")), true);
      l2.end();
      await reading;
      assert.deepEqual(
        got.map((e) => e.kind),
        ["data", "end"],
      );
      l2.close();
      r2.close();
    } finally {
      await x.close();
      await y.close();
      await own.stop();
    }
  });
});
