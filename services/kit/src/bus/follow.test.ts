// test-tier: servers
// followEvents on a real nats-server: a node's pod events arrive live from
// the stream's republished subjects, each node gets every event of its own
// pods and none of another's, exactly once and in revision order — from a
// past revision (catching up from the log), across a cut connection (the
// messages published meanwhile come from the log), and across a kill -9 of
// nats-server.
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { WatchEvent } from "../gen/choreo/api/v1/api.js";
import { isExpired } from "../api/errors.js";
import { emptyMeta, wrap } from "../api/kinds.js";
import { startNats, type NatsHandle } from "../process/servers.js";
import { waitFor } from "../process/process.js";
import { startTcpRelay } from "../process/tcp-relay.js";
import { encodeEvent } from "./events.js";
import { CATCH_UP_CONCURRENCY, catchUpsOf, followEvents } from "./follow.js";
import { EventVerifier, requireSignedEvents } from "./signing.js";
import { connectBus, ensureEventStream } from "./stream.js";
import { EVENT_STREAM, eventSubject, podsOnNodeFilter } from "./subjects.js";

/** What a follower got: revisions in delivery order. */
function follow(nc: NatsConnection, jsm: JetStreamManager, node: string, fromRevision: number, signal: AbortSignal, onFallback?: () => void): number[] {
  const got: number[] = [];
  void (async () => {
    for await (const ev of followEvents({ nc, jsm, filter: podsOnNodeFilter(node), fromRevision, signal, onFallback })) got.push(ev.revision);
  })().catch((err: unknown) => got.push(-1, isExpired(err) ? 410 : 0));
  return got;
}

describe("followEvents: pod events by node, live from the republished subjects", () => {
  let nats: NatsHandle;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const ac = new AbortController();
  let revision = 0;
  /** The revisions published per node ("" = unbound). */
  const byNode = new Map<string, number[]>();

  /** Publishes the next revision as the api's relay does (stream sequence == revision), retrying while JetStream is away. */
  const publish = async (subject: string, node?: string): Promise<number> => {
    const js = jetstream(nc);
    for (;;) {
      try {
        await js.publish(subject, encodeEvent(WatchEvent.fromPartial({ type: "MODIFIED", revision: revision + 1 })), { expect: { lastSequence: revision } });
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    revision++;
    if (node !== undefined) byNode.set(node, [...(byNode.get(node) ?? []), revision]);
    return revision;
  };
  /** A pod change on `node`, or a change of another kind. */
  const change = (i: number): Promise<number> => {
    const node = ["node-1", "node-2", "node-3", ""][i % 4]!;
    if (i % 5 === 4) return publish(eventSubject("services", "default", `svc-${i}`));
    return publish(eventSubject("pods", "default", `pod-${i}`, node), node);
  };
  const of = (node: string, after = 0): number[] => (byNode.get(node) ?? []).filter((r) => r > after);

  before(async () => {
    nats = await startNats();
    nc = await connectBus(nats.url, "follow-test");
    jsm = await ensureEventStream(nc);
  });
  after(async () => {
    ac.abort();
    await nc?.close();
    await nats?.stop();
  });

  it("each node gets every event of its own pods and none of another's, in order, exactly once: catching up, then live", async () => {
    for (let i = 0; i < 60; i++) await change(i);
    const got = new Map(["node-1", "node-2", "node-3"].map((n) => [n, follow(nc, jsm, n, 0, ac.signal)]));
    // Changes keep coming while the followers catch up.
    for (let i = 60; i < 200; i++) await change(i);
    for (const [node, revs] of got) {
      await waitFor(() => revs.length >= of(node).length, { timeoutMs: 20_000, message: `${node}'s events` });
      assert.deepEqual(revs, of(node), `${node}: every event of its pods, in revision order, once`);
    }
    // The republished copies are the only live path, and no other node's event reached any follower.
    for (let i = 200; i < 240; i++) await change(i);
    for (const [node, revs] of got) {
      await waitFor(() => revs.length >= of(node).length, { timeoutMs: 20_000, message: `${node}'s live events` });
      assert.deepEqual(revs, of(node));
    }
  });

  it("from a past revision: only what came after it", async () => {
    const from = revision - 30;
    const revs = follow(nc, jsm, "node-2", from, ac.signal);
    await change(1);
    await waitFor(() => revs.length >= of("node-2", from).length, { timeoutMs: 20_000, message: "node-2's events after the revision" });
    assert.deepEqual(revs, of("node-2", from));
  });

  it("listing once the live subscription is the server's: every change after the list, and no consumer made", async () => {
    const creates: string[] = [];
    const spy = nc.subscribe("$JS.API.CONSUMER.CREATE.>", {
      callback: (_e, m) => {
        creates.push(m.subject);
      },
    });
    await nc.flush();
    let listed = 0;
    const got: number[] = [];
    void (async () => {
      const list = async (): Promise<number> => {
        // Changes go on while the list is made: the list holds those up to its revision.
        for (let i = 0; i < 8; i++) await change(i);
        listed = revision;
        return listed;
      };
      for await (const ev of followEvents({ nc, jsm, filter: podsOnNodeFilter("node-2"), fromRevision: list, signal: ac.signal })) got.push(ev.revision);
    })();
    await waitFor(() => listed > 0, { timeoutMs: 20_000, message: "the list" });
    for (let i = 0; i < 20; i++) await change(i);
    await waitFor(() => got.length >= of("node-2", listed).length, { timeoutMs: 20_000, message: "node-2's events after the list" });
    assert.deepEqual(got, of("node-2", listed));
    spy.unsubscribe();
    assert.deepEqual(creates, [], "no consumer made");
  });

  it("a listing follower across a cut: lists again instead of making a consumer, and every change after the new list arrives live", async () => {
    const relay = await startTcpRelay(nats.port);
    const cutNc = await connectBus(`nats://${nats.credentials.user}:${nats.credentials.password}@${relay.url}`, "follow-test-cut-list");
    const creates: string[] = [];
    const spy = nc.subscribe("$JS.API.CONSUMER.CREATE.>", { callback: (_e, m) => void creates.push(m.subject) });
    await nc.flush();
    try {
      // The list: what the caller's cache holds is the state at the list's revision (here, the revisions so far).
      const lists: number[] = [];
      const got: number[] = [];
      const list = async (): Promise<number> => {
        lists.push(revision);
        got.length = 0;
        return revision;
      };
      void (async () => {
        for await (const ev of followEvents({ nc: cutNc, jsm, filter: podsOnNodeFilter("node-1"), fromRevision: list, signal: ac.signal }))
          got.push(ev.revision);
      })();
      await waitFor(() => lists.length === 1, { timeoutMs: 20_000, message: "the first list" });
      for (let i = 0; i < 8; i++) await change(i);
      await waitFor(() => got.length >= of("node-1", lists[0]).length, { timeoutMs: 20_000, message: "live after the first list" });
      relay.cut();
      // Published while the follower is away: in the next list, not delivered.
      for (let i = 0; i < 20; i++) await change(i);
      await waitFor(() => lists.length === 2, { timeoutMs: 30_000, message: "listed again after the reconnection" });
      for (let i = 0; i < 12; i++) await change(i);
      const second = lists[1]!;
      await waitFor(() => got.length >= of("node-1", second).length, { timeoutMs: 20_000, message: "live after the second list" });
      assert.deepEqual(got, of("node-1", second), "every change after the second list, once, in order");
      assert.deepEqual(creates, [], "no consumer made");
    } finally {
      spy.unsubscribe();
      await cutNc.close().catch(() => undefined);
      relay.close();
    }
  });

  it("a cut connection: what was published meanwhile comes from the log, nothing twice", async () => {
    const relay = await startTcpRelay(nats.port);
    const cutNc = await connectBus(`nats://${nats.credentials.user}:${nats.credentials.password}@${relay.url}`, "follow-test-cut");
    try {
      const start = revision;
      const revs = follow(cutNc, await jetstreamManager(cutNc), "node-1", start, ac.signal);
      await change(0);
      await waitFor(() => revs.length === of("node-1", start).length, { timeoutMs: 20_000, message: "live before the cut" });
      relay.cut();
      // Published while the follower is away: lost to its live subscription.
      for (let i = 0; i < 40; i++) await change(i);
      await waitFor(() => revs.length >= of("node-1", start).length, { timeoutMs: 30_000, message: "node-1's events after the cut" });
      for (let i = 0; i < 8; i++) await change(i);
      await waitFor(() => revs.length >= of("node-1", start).length, { timeoutMs: 30_000, message: "node-1's events after the reconnection" });
      assert.deepEqual(revs, of("node-1", start));
    } finally {
      await cutNc.close().catch(() => undefined);
      relay.close();
    }
  });

  it("many followers on one connection catch up in turns, at most CATCH_UP_CONCURRENCY at once — at start and after a cut — and each gets every event of its node once", async () => {
    const relay = await startTcpRelay(nats.port);
    const manyNc = await connectBus(`nats://${nats.credentials.user}:${nats.credentials.password}@${relay.url}`, "follow-test-many");
    try {
      const start = revision - 40;
      const followers = Array.from({ length: 3 * CATCH_UP_CONCURRENCY }, (_, i) => {
        const node = `node-${(i % 3) + 1}`;
        return { node, revs: follow(manyNc, jsm, node, start, ac.signal) };
      });
      const allCaughtUp = async (message: string) => {
        for (const f of followers) await waitFor(() => f.revs.length >= of(f.node, start).length, { timeoutMs: 60_000, message });
      };
      await allCaughtUp("every follower's catch-up at start");
      assert.ok(catchUpsOf(manyNc).most <= CATCH_UP_CONCURRENCY, `${catchUpsOf(manyNc).most} catch-ups at once`);
      relay.cut();
      for (let i = 0; i < 30; i++) await change(i);
      await allCaughtUp("every follower's catch-up after the cut");
      for (const f of followers) assert.deepEqual(f.revs, of(f.node, start), `${f.node}: every event once, in order`);
      const after = catchUpsOf(manyNc);
      assert.ok(after.most <= CATCH_UP_CONCURRENCY, `${after.most} catch-ups at once`);
      assert.deepEqual([after.running, after.waiting], [0, 0], "every turn given back");
    } finally {
      await manyNc.close().catch(() => undefined);
      relay.close();
    }
  });

  it("kill -9 of nats-server: every change after the restart is delivered, nothing twice", async () => {
    const start = revision;
    const revs = follow(nc, jsm, "node-3", start, ac.signal);
    for (let i = 0; i < 12; i++) await change(i);
    await waitFor(() => revs.length >= of("node-3", start).length, { timeoutMs: 20_000, message: "node-3's events before the kill" });
    await nats.kill();
    await nats.restart();
    for (let i = 0; i < 24; i++) await change(i);
    await waitFor(() => revs.length >= of("node-3", start).length, { timeoutMs: 60_000, message: "node-3's events after the restart" });
    assert.deepEqual(revs, of("node-3", start));
  });

  it("a change the follower holds already (its own write): taken instead of the message, which is not verified; the others are", async () => {
    // A connection that requires signed events: the test's messages are unsigned, so each is refused — unless known.
    const signedNc = await connectBus(nats.url, "follow-test-signed");
    const rejected: number[] = [];
    requireSignedEvents(signedNc, { verifier: new EventVerifier(generateKeyPairSync("ed25519").publicKey), onRejected: (_why, _s, seq) => rejected.push(seq) });
    try {
      const start = revision;
      const mine = WatchEvent.fromPartial({
        type: "MODIFIED",
        revision: start + 1,
        object: wrap("pod", { apiVersion: "v1", kind: "Pod", metadata: emptyMeta({ name: "mine" }), spec: undefined, status: undefined }),
      });
      const got: WatchEvent[] = [];
      const asked: number[] = [];
      const known = (rev: number): WatchEvent | undefined => (asked.push(rev), rev === start + 1 ? mine : undefined);
      void (async () => {
        for await (const ev of followEvents({ nc: signedNc, jsm, filter: podsOnNodeFilter("node-1"), fromRevision: start, signal: ac.signal, known }))
          got.push(ev);
      })();
      await publish(eventSubject("pods", "default", "mine", "node-1"), "node-1");
      await publish(eventSubject("pods", "default", "other", "node-1"), "node-1");
      await waitFor(() => got.length + rejected.length >= 2, { timeoutMs: 20_000, message: "both messages handled" });
      assert.equal(got.length, 1);
      assert.equal(got[0], mine, "the change as the follower holds it");
      assert.deepEqual(rejected, [start + 2], "the other message verified, and refused (unsigned)");
      assert.deepEqual(asked, [start + 1, start + 2]);
    } finally {
      await signedNc.close();
    }
  });

  it("a revision the log no longer holds: 410 Expired (the informer relists)", async () => {
    await jsm.streams.purge(EVENT_STREAM, { keep: 10 });
    const revs = follow(nc, jsm, "node-1", 1, ac.signal);
    await waitFor(() => revs.length >= 2, { timeoutMs: 20_000, message: "the follower's end" });
    assert.deepEqual(revs, [-1, 410]);
  });
});

describe("followEvents on a stream made without the RePublish", () => {
  it("reads through a filtered consumer, as before", async () => {
    const nats = await startNats();
    const nc = await connectBus(nats.url, "follow-test-old");
    const ac = new AbortController();
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: EVENT_STREAM, subjects: ["choreo.ev.>"] });
      const js = jetstream(nc);
      await js.publish(eventSubject("pods", "default", "a", "node-1"), encodeEvent(WatchEvent.fromPartial({ revision: 1 })));
      await js.publish(eventSubject("pods", "default", "b", "node-2"), encodeEvent(WatchEvent.fromPartial({ revision: 2 })));
      let fellBack = false;
      const revs = follow(nc, jsm, "node-1", 0, ac.signal, () => (fellBack = true));
      await js.publish(eventSubject("pods", "default", "c", "node-1"), encodeEvent(WatchEvent.fromPartial({ revision: 3 })));
      await waitFor(() => revs.length >= 2, { timeoutMs: 20_000, message: "node-1's events" });
      assert.deepEqual(revs, [1, 3]);
      assert.equal(fellBack, true);
    } finally {
      ac.abort();
      await nc.close();
      await nats.stop();
    }
  });
});
