// test-tier: servers
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import type { NatsConnection } from "@nats-io/transport-node";
import type { JetStreamManager } from "@nats-io/jetstream";
import { connectBus, decodeEvent, ensureEventStream, eventSubject, streamState } from "@choreo/kit/bus";
import { Object as ObjectMsg, WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { startNats, startRedis, waitFor, type ServerHandle } from "@choreo/kit/testing";
import { RedisStore, StoreError } from "./redis-store.js";
import { Relay } from "./relay.js";
import { WatchCache } from "./watch-cache.js";
import { describeStorageContract } from "./storage-contract.js";
import { CHANGES_KEY } from "./keys.js";

const event = (name: string) =>
  fromKubeJson({ apiVersion: "v1", kind: "Event", metadata: { name, namespace: "default" }, involvedObject: { kind: "Pod", name: "p" } });

function op(mode: "create" | "update" | "delete", name: string, expectedRevision?: number) {
  const object = ObjectMsg.encode(event(name)).finish();
  const ev = WatchEvent.encode({
    type: mode === "create" ? "ADDED" : mode === "update" ? "MODIFIED" : "DELETED",
    object: event(name),
    status: undefined,
    revision: 0,
    prevLabels: {},
    prevFields: {},
    hasPrev: false,
  }).finish();
  return { mode, resource: "events", namespace: "default", name, expectedRevision, object, event: ev, subject: eventSubject("events", "default", name) };
}

describe("storage: Lua CAS, relay, watch cache", () => {
  let nats: ServerHandle;
  let redis: ServerHandle;
  let r: Redis;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let store: RedisStore;
  before(async () => {
    [nats, redis] = await Promise.all([startNats(), startRedis()]);
    r = new Redis(redis.url);
    nc = await connectBus(nats.url, "storage-test");
    jsm = await ensureEventStream(nc, { retention: 1000 });
    store = new RedisStore(r);
  });
  after(async () => {
    r?.disconnect();
    await nc?.close();
    await Promise.all([nats?.stop(), redis?.stop()]);
  });

  it("writes with compare-and-set: one revision per write, refusals move nothing", async () => {
    assert.equal(await store.write(op("create", "a")), 1);
    await assert.rejects(store.write(op("create", "a")), (e: unknown) => e instanceof StoreError && e.code === "exists" && e.currentRevision === 1);
    assert.equal(await store.write(op("update", "a", 1)), 2);
    await assert.rejects(store.write(op("update", "a", 1)), (e: unknown) => e instanceof StoreError && e.code === "conflict" && e.currentRevision === 2);
    await assert.rejects(store.write(op("update", "zz", 1)), (e: unknown) => e instanceof StoreError && e.code === "not-found");
    assert.equal(await store.currentRevision(), 2);
    assert.equal(await r.xlen("{choreo}:changes"), 2);
    const got = await store.get("events", "default", "a");
    assert.equal(got?.revision, 2);
  });

  it("writes arriving together go to Redis in one Lua call, each with its own revision and its own answer", async () => {
    const scriptCalls = async () => {
      const stats = await r.info("commandstats");
      return [...stats.matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
    };
    // In a namespace of their own (the list test below counts `default`).
    const b = (...a: Parameters<typeof op>) => ({ ...op(...a), namespace: "batch" });
    await store.write(b("create", "batch-taken"));
    const taken = await store.currentRevision();
    const records = await r.xlen(CHANGES_KEY);
    const calls = await scriptCalls();
    const [first, exists, stale, missing, update, last] = await Promise.allSettled([
      store.write(b("create", "batch-1")),
      store.write(b("create", "batch-taken")),
      store.write(b("update", "batch-taken", taken - 1)),
      store.write(b("update", "batch-none", taken)),
      store.write(b("update", "batch-taken", taken)),
      store.write(b("create", "batch-2")),
    ]);
    assert.equal((await scriptCalls()) - calls, 1, "one Lua call for the six writes");
    assert.deepEqual(first, { status: "fulfilled", value: taken + 1 });
    assert.deepEqual(update, { status: "fulfilled", value: taken + 2 });
    assert.deepEqual(last, { status: "fulfilled", value: taken + 3 });
    const refused = (s: PromiseSettledResult<number>) =>
      s.status === "rejected" && s.reason instanceof StoreError ? [s.reason.code, s.reason.currentRevision] : s;
    assert.deepEqual(refused(exists), ["exists", taken]);
    assert.deepEqual(refused(stale), ["conflict", taken]);
    assert.deepEqual(refused(missing), ["not-found", 0]);
    assert.equal(await store.currentRevision(), taken + 3);
    assert.equal(await r.xlen(CHANGES_KEY), records + 3, "a change record per write that happened, none for the refused");
    assert.equal((await store.get("events", "batch", "batch-taken"))?.revision, taken + 2);
    assert.equal(await store.get("events", "batch", "batch-none"), undefined);
  });

  it("keeps secondary indexes with the object", async () => {
    const idx = { index: "node", value: "n1" };
    await store.write({ ...op("create", "b"), indexAdd: [idx] });
    assert.deepEqual(await store.indexMembers("events", idx), ["default/b"]);
    const page = await store.list("events", { index: idx });
    assert.equal(page.items.length, 1);
    await store.write({ ...op("delete", "b", await store.currentRevision()), indexRemove: [idx] });
    assert.deepEqual(await store.indexMembers("events", idx), []);
  });

  it("lists in name order, by namespace, in pages", async () => {
    for (const n of ["c3", "c1", "c2"]) await store.write(op("create", n));
    const all = await store.list("events", { namespace: "default" });
    assert.deepEqual(
      all.items.map((i) => ObjectMsg.decode(i.bytes).kind?.value.metadata?.name),
      ["a", "c1", "c2", "c3"],
    );
    assert.equal(all.revision, await store.currentRevision());
    const p1 = await store.list("events", { namespace: "default", limit: 2 });
    assert.equal(p1.items.length, 2);
    const p2 = await store.list("events", { namespace: "default", limit: 2, after: p1.next });
    assert.deepEqual(
      p2.items.map((i) => ObjectMsg.decode(i.bytes).kind?.value.metadata?.name),
      ["c2", "c3"],
    );
    assert.equal((await store.list("events", { namespace: "other" })).items.length, 0);
  });

  it("relays every change in revision order with sequence == revision, and the watch cache replays from any revision", async () => {
    const ac = new AbortController();
    const relay = new Relay({ redis: r, nc, jsm, log: silentLogger(), id: "t" });
    const cache = new WatchCache({ nc, jsm, log: silentLogger(), capacity: 100 });
    const running = Promise.all([relay.start(ac.signal), cache.start(ac.signal)]);
    const rev = await store.currentRevision();
    await waitFor(async () => (await streamState(jsm)).lastRevision === rev, { message: "relay caught up" });
    assert.equal(await r.xlen("{choreo}:changes"), 0, "published records are trimmed");
    await cache.ready;
    for (let from = 0; from < rev; from++) {
      const got: number[] = [];
      const sig = new AbortController();
      for await (const c of cache.since(from, sig.signal)) {
        got.push(c.revision);
        assert.equal(c.event.object?.kind?.value.metadata?.resourceVersion, String(c.revision));
        if (c.revision === rev) break;
      }
      assert.deepEqual(
        got,
        Array.from({ length: rev - from }, (_, i) => from + 1 + i),
      );
    }
    // Live: a new write reaches a waiting watcher.
    const sig = new AbortController();
    const it = cache.since(rev, sig.signal);
    const next = it.next();
    await store.write(op("create", "live"));
    const live = await next;
    assert.equal(live.done, false);
    assert.equal(live.value && "revision" in live.value ? live.value.revision : 0, rev + 1);
    sig.abort();
    ac.abort();
    await running;
    const info = await jsm.streams.info("CHOREO_EVENTS");
    assert.equal(info.state.last_seq, rev + 1);
    const msg = await jsm.streams.getMessage("CHOREO_EVENTS", { seq: 1 });
    assert.equal(decodeEvent(msg!.data).revision, 1);
  });

  it("publishers taking turns (the lease passing between api replicas): every revision once, in order", async () => {
    const a = new Relay({ redis: r, nc, jsm, log: silentLogger(), id: "a" });
    const b = new Relay({ redis: r, nc, jsm, log: silentLogger(), id: "b" });
    for (const [turn, relay] of [a, b, a, b, a].entries()) {
      const ac = new AbortController();
      const running = relay.start(ac.signal);
      for (let i = 0; i < 3; i++) await store.write(op("create", `turn-${turn}-${i}`));
      const rev = await store.currentRevision();
      await waitFor(async () => (await streamState(jsm)).lastRevision === rev, { message: `turn ${turn}: relay caught up` });
      ac.abort();
      await running;
    }
    const state = await streamState(jsm);
    assert.equal(state.lastRevision, await store.currentRevision());
    assert.equal(state.messages, state.lastRevision, "one message per revision");
    for (let seq = state.lastRevision - 14; seq <= state.lastRevision; seq++) {
      const msg = await jsm.streams.getMessage("CHOREO_EVENTS", { seq });
      const ev = decodeEvent(msg!.data);
      assert.equal(ev.revision, seq);
      assert.equal(ev.object?.kind?.value.metadata?.resourceVersion, String(seq));
    }
    assert.equal(await r.xlen(CHANGES_KEY), 0, "published records are trimmed");
  });

  it("after a ConfigMap's or Secret's event is stored, a body-less notice on choreo.notice.<resource>.<namespace>.<name>; none for other kinds", async () => {
    const notices: { subject: string; size: number }[] = [];
    const sub = nc.subscribe("choreo.notice.>", { callback: (_e, m) => void notices.push({ subject: m.subject, size: m.data.length }) });
    await nc.flush();
    const ac = new AbortController();
    const relay = new Relay({ redis: r, nc, jsm, log: silentLogger(), id: "t" });
    const running = relay.start(ac.signal);
    const as = (resource: string, name: string) => ({ ...op("create", name), resource, subject: eventSubject(resource, "default", name) });
    await store.write(as("configmaps", "cfg.v1"));
    await store.write(as("events", "noticeless"));
    await store.write(as("secrets", "s"));
    const rev = await store.currentRevision();
    await waitFor(async () => (await streamState(jsm)).lastRevision === rev, { message: "relay caught up" });
    await waitFor(() => notices.length === 2, { message: `two notices (${JSON.stringify(notices)})` });
    await nc.flush();
    assert.deepEqual(notices, [
      { subject: "choreo.notice.configmaps.default.cfg~v1", size: 0 },
      { subject: "choreo.notice.secrets.default.s", size: 0 },
    ]);
    sub.unsubscribe();
    ac.abort();
    await running;
  });
});

describeStorageContract("RedisStore", async () => {
  const server = await startRedis();
  const client = new Redis(server.url);
  return {
    storage: new RedisStore(client),
    changeRecords: () => client.xlen(CHANGES_KEY),
    async stop() {
      client.disconnect();
      await server.stop();
    },
  };
});
