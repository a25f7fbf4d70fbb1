// test-tier: servers
// subscribe() on a real nats-server, with the read-only subscriber's NATS
// user: typed events in order, durable resumption (at-least-once: the event
// being handled comes again), filters, and 410 Expired for a position the
// log no longer holds — before and while consuming.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { isExpired } from "@choreo/kit";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { connectBus, ensureEventStream, EVENT_STREAM } from "@choreo/kit/bus";
import { subscriberNatsPermissions } from "@choreo/kit/secrets";
import { startNats, waitFor, type ServerHandle } from "@choreo/kit/testing";
import { subscribe, type ChangeEvent } from "./subscribe.js";
import { publishPodChanges, type PodChange } from "./testing.js";

const pods = (n: number, extra: Partial<PodChange> = {}): PodChange[] =>
  Array.from({ length: n }, (_, i) => ({ type: "ADDED" as const, namespace: "default", name: `p${i}`, node: "n1", ...extra }));

describe("subscribe()", () => {
  let nats: ServerHandle;
  let api: NatsConnection;
  let sub: NatsConnection;

  before(async () => {
    nats = await startNats();
    api = await connectBus(nats.url, "api");
    await ensureEventStream(api, { retention: 50 });
    sub = await connectBus(nats.address, "subscriber", await nats.addUser("subscriber", subscriberNatsPermissions()));
  });
  after(async () => {
    await sub?.close();
    await api?.close();
    await nats?.stop();
  });

  it("a subscriber's credentials read typed events but cannot ask the api nor publish events", async () => {
    const last = await publishPodChanges(api, 1, pods(3, { labels: { app: "web" } }));
    const got: ChangeEvent[] = [];
    for await (const ev of subscribe(sub, { resource: "pods", fromRevision: 0, untilCaughtUp: true })) got.push(ev);
    assert.deepEqual(
      got.map((e) => [e.type, e.revision, e.kind.kind, e.object.metadata?.name, (e.object as Pod).spec?.nodeName]),
      [1, 2, 3].map((r) => ["ADDED", r, "Pod", `p${r - 1}`, "n1"]),
    );
    assert.equal(last, 3);
    // The api answers choreo.api.get here, yet the subscriber's request is refused (its publish is not allowed).
    const responder = api.subscribe("choreo.api.get", { callback: (_e, m) => void m.respond("ok") });
    await api.flush();
    assert.equal((await api.request("choreo.api.get", "", { timeout: 2_000 })).string(), "ok");
    await assert.rejects(sub.request("choreo.api.get", "", { timeout: 1_000 }), /permissions|timeout/i);
    responder.unsubscribe();
  });

  it("durable: resumes after the last acked event; the event being handled when it stopped comes again", async () => {
    const first = 4;
    const last = await publishPodChanges(api, first, pods(10, { namespace: "audit" }));
    const seen: number[] = [];
    for await (const ev of subscribe(sub, { resource: "pods", namespace: "audit", durable: "audit-1", fromRevision: first - 1 })) {
      seen.push(ev.revision);
      if (seen.length === 4) break; // stops while handling the 4th: not acked
    }
    assert.deepEqual(seen, [4, 5, 6, 7]);
    const again: number[] = [];
    for await (const ev of subscribe(sub, { resource: "pods", namespace: "audit", durable: "audit-1" })) {
      again.push(ev.revision);
      if (ev.revision === last) break;
    }
    assert.deepEqual(again, [7, 8, 9, 10, 11, 12, 13]);
    // The same durable name for another filter is refused.
    await assert.rejects(subscribe(sub, { resource: "services", durable: "audit-1" }).next(), /follows choreo\.ev\.pods\.\*\.audit\.\*/);
    await (await jetstreamManager(api)).consumers.delete(EVENT_STREAM, "audit-1");
  });

  it("filters: node, namespace and label selector", async () => {
    const start = 13;
    await publishPodChanges(api, start + 1, [
      { type: "ADDED", namespace: "f", name: "a", node: "n2", labels: { tier: "db" } },
      { type: "ADDED", namespace: "f", name: "b", node: "n3", labels: { tier: "db" } },
      { type: "ADDED", namespace: "g", name: "c", node: "n2", labels: { tier: "web" } },
    ]);
    const names = async (o: Parameters<typeof subscribe>[1]): Promise<string[]> => {
      const out: string[] = [];
      for await (const ev of subscribe(sub, { ...o, fromRevision: start, untilCaughtUp: true })) out.push(`${ev.type} ${ev.object.metadata?.name}`);
      return out;
    };
    assert.deepEqual(await names({ resource: "pods", node: "n2" }), ["ADDED a", "ADDED c"]);
    assert.deepEqual(await names({ resource: "pods", namespace: "f", labelSelector: "tier=db" }), ["ADDED a", "ADDED b"]);
    assert.deepEqual(await names({ resource: "pods", labelSelector: "tier in (web)" }), ["ADDED c"]);
    await assert.rejects(subscribe(sub, { resource: "services", node: "n2" }).next(), /node selects pods only/);
  });

  it("durable: lives through kill -9 of nats-server — every change after the restart once, in order, none lost", async () => {
    const jsm = await jetstreamManager(api);
    const from = (await jsm.streams.info(EVENT_STREAM)).state.last_seq;
    await publishPodChanges(api, from + 1, pods(5, { namespace: "k9" }));
    const got: number[] = [];
    const it = subscribe(sub, { resource: "pods", namespace: "k9", durable: "k9", fromRevision: from })[Symbol.asyncIterator]();
    const t0 = Date.now();
    for (let i = 0; i < 5; i++) got.push((await it.next()).value!.revision);
    await nats.kill();
    await nats.restart();
    await waitFor(
      async () => {
        try {
          return (await jsm.streams.info(EVENT_STREAM)).state.last_seq === from + 5;
        } catch {
          return false;
        }
      },
      { timeoutMs: 30_000, message: "JetStream back" },
    );
    // The api's publisher reconnects; the subscriber's consumer is made again after the last event it handed over.
    const next = from + 6;
    await publishPodChanges(
      api,
      next,
      pods(5, { namespace: "k9", name: "later" }).map((p, i) => ({ ...p, name: `later-${i}` })),
    );
    for (let i = 0; i < 5; i++) got.push((await it.next()).value!.revision);
    await it.return(undefined);
    assert.deepEqual(
      got,
      Array.from({ length: 10 }, (_, i) => from + 1 + i),
    );
    console.log(JSON.stringify({ afterRestartMs: Date.now() - t0 }));
    await jsm.consumers.delete(EVENT_STREAM, "k9").catch(() => undefined);
  });

  it("410 Expired: a position older than the log keeps, and a durable left behind by the retention", async () => {
    const base = (await (await jetstreamManager(api)).streams.info(EVENT_STREAM)).state.last_seq;
    const durableAt = base;
    // A durable made now, then 60 changes (retention 50) drop what it had not read yet.
    const early = subscribe(sub, { resource: "pods", durable: "late", fromRevision: durableAt });
    const pending = early.next();
    await publishPodChanges(api, base + 1, pods(1, { namespace: "x" }));
    assert.equal((await pending).value?.revision, base + 1);
    await early.return(undefined);
    await publishPodChanges(api, base + 2, pods(60, { namespace: "x" }));
    const err = await subscribe(sub, { resource: "pods", fromRevision: 1 })
      .next()
      .catch((e: unknown) => e);
    assert.ok(isExpired(err), String(err));
    assert.match(String(err), /too old resource version: 1 /);
    const late = await subscribe(sub, { resource: "pods", durable: "late" })
      .next()
      .catch((e: unknown) => e);
    assert.ok(isExpired(late), String(late));
  });
});
