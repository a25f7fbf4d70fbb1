// test-tier: servers
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import type { JetStreamManager } from "@nats-io/jetstream";
import { startNats, type ServerHandle } from "../process/servers.js";
import { consumeEvents } from "./events.js";
import { connectBus, ensureEventStream } from "./stream.js";
import { resourceFilter } from "./subjects.js";

describe("consumeEvents", () => {
  let nats: ServerHandle;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  before(async () => {
    nats = await startNats();
    nc = await connectBus(nats.url, "events-test");
    jsm = await ensureEventStream(nc);
  });
  after(async () => {
    await nc?.close();
    await nats?.stop();
  });

  // An informer aborted while its watch was still making the consumer kept
  // waiting for messages forever, and so did whoever awaited its shutdown
  // (integration-tests/watch.test.ts hung 1 run in 4 under load).
  it("ends when the signal aborts at any moment, including while the consumer is being made", async () => {
    for (let i = 0; i < 60; i++) {
      const ac = new AbortController();
      const it = consumeEvents({ nc, jsm, filter: resourceFilter("pods"), fromRevision: 0, signal: ac.signal })[Symbol.asyncIterator]();
      const next = it.next();
      // Abort after 0..5 turns of the event loop: before, during and after the consumer's creation.
      for (let t = 0; t < i % 6; t++) await new Promise((r) => setImmediate(r));
      if (i % 6 === 5) await new Promise((r) => setTimeout(r, 2));
      ac.abort();
      let timer: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([
        next.then((r) => (r.done ? "ended" : "event")),
        new Promise<string>((r) => (timer = setTimeout(() => r("hung"), 5_000))),
      ]);
      clearTimeout(timer);
      assert.equal(outcome, "ended", `abort after ${i % 6} turns`);
    }
  });
});
