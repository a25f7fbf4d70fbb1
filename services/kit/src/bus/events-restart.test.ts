// test-tier: servers
// consumeEvents across a kill -9 and restart of nats-server: ten consumers
// (an actor's informers, each on its own subject) keep delivering once the
// server is back. nats.js's pull consumer alone noticed its consumer gone
// with the server only when its pull expired and heartbeats were missed: a
// quiet subject's next change then came 30 to 75 s late (seen in the drain
// fault scenario as a PodDisruptionBudget informer that stayed stale).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JetStreamManager } from "@nats-io/jetstream";
import { WatchEvent } from "../gen/choreo/api/v1/api.js";
import { startNats, type ServerHandle } from "../process/servers.js";
import { consumeEvents, encodeEvent } from "./events.js";
import { connectBus, ensureEventStream } from "./stream.js";

/** A delivery this much later than its publish is a consumer that did not come back. */
const LATE_MS = 10_000;
const N = 10;

describe("consumeEvents across a nats-server restart", () => {
  let nats: ServerHandle;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const ac = new AbortController();
  before(async () => {
    nats = await startNats();
    nc = await connectBus(nats.url, "events-restart-test");
    jsm = await ensureEventStream(nc);
  });
  after(async () => {
    ac.abort();
    await nc?.close();
    await nats?.stop();
  });

  it("every consumer delivers the changes made after the restart, each within seconds", async () => {
    const js = jetstream(nc);
    let revision = 0;
    /** Publishes the next revision on subject `i`'s stream, retrying while JetStream is not back. */
    const publish = async (i: number): Promise<number> => {
      for (;;) {
        try {
          await js.publish(`choreo.ev.r${i}._.x`, encodeEvent(WatchEvent.fromPartial({ type: "ADDED", revision: revision + 1 })), {
            expect: { lastSequence: revision },
          });
          return ++revision;
        } catch {
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    };
    const seen = Array.from({ length: N }, () => new Map<number, number>());
    for (let i = 0; i < N; i++)
      void (async () => {
        for await (const ev of consumeEvents({ nc, jsm, filter: `choreo.ev.r${i}.>`, fromRevision: 0, signal: ac.signal }))
          seen[i]!.set(ev.revision, Date.now());
      })().catch(() => undefined);
    const delivered = async (i: number, rev: number): Promise<void> => {
      while (!seen[i]!.has(rev)) await new Promise((r) => setTimeout(r, 50));
    };
    for (let i = 0; i < N; i++) await delivered(i, await publish(i));

    await nats.kill();
    await new Promise((r) => setTimeout(r, 3_000));
    await nats.restart();
    // One change per subject, 3 s apart: the later ones land on consumers that waited quietly since the restart.
    const published: [number, number, number][] = [];
    for (let i = 0; i < N; i++) {
      const rev = await publish(i);
      published.push([i, rev, Date.now()]);
      await new Promise((r) => setTimeout(r, 3_000));
    }
    await Promise.race([Promise.all(published.map(([i, rev]) => delivered(i, rev))), new Promise((r) => setTimeout(r, 2 * LATE_MS))]);
    const delays = published.map(([i, rev, at]) => (seen[i]!.get(rev) ?? Infinity) - at);
    assert.ok(
      delays.every((d) => d < LATE_MS),
      `each change delivered within ${LATE_MS} ms of its publish: ${delays.join(", ")} ms`,
    );
  });
});
