// test-tier: servers
// Each identity its own NATS user with its own permissions, on a real
// nats-server: actors request the api and read the event log; a node agent
// hears only its own node's subjects; nobody but the api publishes events or
// writes the stream; the read-only `events` user reads and nothing else.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { AckPolicy, DeliverPolicy, jetstream, type JetStreamManager } from "@nats-io/jetstream";
import { connectBus, ensureEventStream, streamState } from "../bus/stream.js";
import { EVENT_STREAM, podsOnNodeFilter } from "../bus/subjects.js";
import { actorNatsPermissions, eventsReaderNatsPermissions, nodeNatsPermissions } from "../secrets/nats-users.js";
import { API_NATS_USER, fileMode, inboxPrefixOf } from "../secrets/secrets.js";
import { startNats, type ServerHandle } from "./servers.js";
import { waitFor } from "./process.js";

/** The permission errors the server reported to `nc` (nats.js's status stream). */
function permissionErrors(nc: NatsConnection): string[] {
  const seen: string[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === "error") seen.push(String(s.error?.message ?? s.error));
  })();
  return seen;
}

/** Messages `sub` gets, in order. */
function collect(sub: Subscription): string[] {
  const got: string[] = [];
  void (async () => {
    for await (const m of sub) got.push(m.subject);
  })().catch(() => undefined);
  return got;
}

describe("NATS users: per-identity permissions", () => {
  let nats: ServerHandle;
  let api: NatsConnection;
  let jsm: JetStreamManager;
  const conns: NatsConnection[] = [];
  const as = async (name: string, file: string): Promise<NatsConnection> => {
    const nc = await connectBus(nats.address, name, file);
    conns.push(nc);
    return nc;
  };
  let node1File = "";
  let node2File = "";
  let actorFile = "";
  let eventsFile = "";

  before(async () => {
    nats = await startNats();
    api = await connectBus(nats.url, "api");
    jsm = await ensureEventStream(api, { retention: 1_000 });
    // The api publishes one pod event for each node.
    const js = jetstream(api);
    await js.publish("choreo.ev.pods.node-1.default.a", "a");
    await js.publish("choreo.ev.pods.node-2.default.b", "b");
    node1File = await nats.addUser("node-node-1", nodeNatsPermissions("node-1"));
    node2File = await nats.addUser("node-node-2", nodeNatsPermissions("node-2"));
    actorFile = await nats.addUser("scheduler", actorNatsPermissions());
    eventsFile = await nats.addUser("events", eventsReaderNatsPermissions());
  });
  after(async () => {
    await Promise.all(conns.map((c) => c.close().catch(() => undefined)));
    await api?.close();
    await nats?.stop();
  });

  it("credentials files are 0600; without credentials, or with a wrong password, no connection", async () => {
    for (const f of [node1File, node2File, actorFile, eventsFile]) assert.equal(fileMode(f), 0o600);
    await assert.rejects(connect({ servers: nats.address, maxReconnectAttempts: 0 }), /Authorization Violation/);
    await assert.rejects(connect({ servers: nats.address, user: "node-node-1", pass: "wrong", maxReconnectAttempts: 0 }), /Authorization Violation/);
  });

  it("an actor requests the api and reads the event log (the JetStream calls consumeEvents makes)", async () => {
    const responder = api.subscribe("choreo.api.get", { callback: (_e, m) => void m.respond("ok") });
    await api.flush();
    const nc = await as("scheduler", actorFile);
    assert.equal((await nc.request("choreo.api.get", "", { timeout: 10_000 })).string(), "ok");
    responder.unsubscribe();
    const { jetstreamManager } = await import("@nats-io/jetstream");
    const state = await streamState(await jetstreamManager(nc));
    assert.equal(state.lastRevision, 2);
    const consumer = await jetstream(nc).consumers.get(EVENT_STREAM, { filter_subjects: "choreo.ev.pods.>", deliver_policy: DeliverPolicy.All });
    const batch = await consumer.fetch({ max_messages: 2, expires: 10_000 });
    const subjects: string[] = [];
    for await (const m of batch) subjects.push(m.subject);
    assert.deepEqual(subjects, ["choreo.ev.pods.node-1.default.a", "choreo.ev.pods.node-2.default.b"]);
  });

  it("a node agent's credentials cannot publish an event nor write the stream: refused, nothing stored or delivered", async () => {
    const watcher = api.subscribe("choreo.ev.>");
    const marker = api.subscribe("choreo.api.marker");
    const seenEvents = collect(watcher);
    const seenMarkers = collect(marker);
    await api.flush();
    const nc = await as("node-1", node1File);
    const errors = permissionErrors(nc);
    nc.publish("choreo.ev.pods.x", "forged");
    nc.publish("choreo.ev.pods.node-1.default.forged", "forged");
    // Same connection, in order: once the marker (allowed) arrives, the forgeries would have arrived before it.
    nc.publish("choreo.api.marker", "");
    await waitFor(() => seenMarkers.length === 1, { timeoutMs: 10_000, message: "the marker" });
    assert.deepEqual(seenEvents, []);
    await waitFor(() => errors.some((e) => /Permissions Violation for Publish to "choreo\.ev\.pods\.x"/.test(e)), {
      timeoutMs: 10_000,
      message: `the server's refusal (${errors.join("; ")})`,
    });
    // Into the stream through JetStream: the publish is refused, and purging or deleting a message too.
    await assert.rejects(jetstream(nc, { timeout: 2_000 }).publish("choreo.ev.pods.node-1.default.forged", "forged"));
    const { jetstreamManager } = await import("@nats-io/jetstream");
    const njsm = await jetstreamManager(nc, { timeout: 2_000 });
    await assert.rejects(njsm.streams.purge(EVENT_STREAM));
    await assert.rejects(njsm.streams.deleteMessage(EVENT_STREAM, 1));
    await assert.rejects(njsm.streams.add({ name: "EVIL", subjects: ["evil.>"] }));
    const state = await streamState(jsm);
    assert.deepEqual([state.firstRevision, state.lastRevision, state.messages], [1, 2, 2]);
    watcher.unsubscribe();
    marker.unsubscribe();
  });

  it("node-1's credentials hear node-1's subjects, not node-2's; node-2 answers its own", async () => {
    const n1 = await as("node-1-subs", node1File);
    const errors = permissionErrors(n1);
    const other = n1.subscribe("choreo.agent.node-2.>");
    const own = n1.subscribe("choreo.agent.node-1.>");
    const gotOther = collect(other);
    const gotOwn = collect(own);
    await n1.flush();
    await waitFor(() => errors.some((e) => /Permissions Violation for Subscription to "choreo\.agent\.node-2\.>"/.test(e)), {
      timeoutMs: 10_000,
      message: `the server's refusal (${errors.join("; ")})`,
    });
    api.publish("choreo.agent.node-2.logs", "for node-2");
    api.publish("choreo.agent.node-1.logs", "for node-1");
    await waitFor(() => gotOwn.length === 1, { timeoutMs: 10_000, message: "node-1's request" });
    assert.deepEqual(gotOther, []);
    // A node answers a request on its own subject (allow_responses).
    const n2 = await as("node-2", node2File);
    n2.subscribe("choreo.agent.node-2.logs", { callback: (_e, m) => void m.respond("from node-2") });
    await n2.flush();
    assert.equal((await api.request("choreo.agent.node-2.logs", "", { timeout: 10_000 })).string(), "from node-2");
    // Its own pods' events through JetStream.
    const consumer = await jetstream(n2).consumers.get(EVENT_STREAM, { filter_subjects: podsOnNodeFilter("node-2"), deliver_policy: DeliverPolicy.All });
    const m = await consumer.next({ expires: 10_000 });
    assert.equal(m?.subject, "choreo.ev.pods.node-2.default.b");
  });

  it("the events user reads the stream and can neither call the api nor publish", async () => {
    const nc = await as("events", eventsFile);
    const errors = permissionErrors(nc);
    const consumer = await jetstream(nc).consumers.get(EVENT_STREAM, { filter_subjects: "choreo.ev.>", deliver_policy: DeliverPolicy.All });
    const m = await consumer.next({ expires: 10_000 });
    assert.equal(m?.subject, "choreo.ev.pods.node-1.default.a");
    nc.publish("choreo.api.delete", "");
    await waitFor(() => errors.some((e) => /Permissions Violation for Publish to "choreo\.api\.delete"/.test(e)), {
      timeoutMs: 10_000,
      message: `the server's refusal (${errors.join("; ")})`,
    });
  });

  it("node-1's consumers: its pods and the shared kinds only; no other filter, direct get, message get or consumer list", async () => {
    const js = jetstream(api);
    await js.publish("choreo.ev.services.default.web", "svc");
    await js.publish("choreo.ev.endpoints.default.web", "ep");
    await js.publish("choreo.ev.configmaps.default.cfg", "cfg");
    await js.publish("choreo.ev.secrets.default.s", "sealed");
    const nc = await as("node-1-reads", node1File);
    const { jetstreamManager } = await import("@nats-io/jetstream");
    const njsm = await jetstreamManager(nc, { timeout: 2_000 });
    const first = async (filter: string): Promise<string | undefined> => {
      const c = await jetstream(nc, { timeout: 2_000 }).consumers.get(EVENT_STREAM, { filter_subjects: filter, deliver_policy: DeliverPolicy.All });
      const m = await c.next({ expires: 10_000 });
      await c.delete().catch(() => undefined);
      return m?.subject;
    };
    // Allowed: its own pods, Services, Endpoints — each delivered.
    assert.equal(await first(podsOnNodeFilter("node-1")), "choreo.ev.pods.node-1.default.a");
    assert.equal(await first("choreo.ev.services.>"), "choreo.ev.services.default.web");
    assert.equal(await first("choreo.ev.endpoints.>"), "choreo.ev.endpoints.default.web");
    // Refused: every other filter, and no filter at all.
    for (const filter of [
      podsOnNodeFilter("node-2"),
      "choreo.ev.pods.>",
      "choreo.ev.>",
      ">",
      "choreo.ev.configmaps.>",
      "choreo.ev.secrets.>",
      "choreo.ev.configmaps.default.cfg",
    ])
      await assert.rejects(first(filter), /Permissions Violation/, `a consumer on ${filter}`);
    await assert.rejects(njsm.consumers.add(EVENT_STREAM, { ack_policy: AckPolicy.None }), /Permissions Violation/, "an unfiltered consumer (plain create)");
    await assert.rejects(njsm.consumers.add(EVENT_STREAM, { durable_name: "evil", ack_policy: AckPolicy.None }), /Permissions Violation/, "a durable consumer");
    // The subject names node-1's filter, the body another: the server refuses the mismatch.
    const forged = await nc.request(
      `$JS.API.CONSUMER.CREATE.${EVENT_STREAM}.forged.choreo.ev.pods.node-1.>`,
      JSON.stringify({ stream_name: EVENT_STREAM, config: { name: "forged", filter_subject: "choreo.ev.>", ack_policy: "none" } }),
      { timeout: 10_000 },
    );
    assert.match(forged.string(), /did not match filtered subject/);
    assert.equal(
      (await jsm.consumers.list(EVENT_STREAM).next()).some((c) => c.name === "forged"),
      false,
    );
    // Messages by sequence: direct get and message get; consumer listing.
    await assert.rejects(njsm.streams.getMessage(EVENT_STREAM, { seq: 1 }), /Permissions Violation/, "a message get");
    await assert.rejects(
      nc.request(`$JS.API.DIRECT.GET.${EVENT_STREAM}`, JSON.stringify({ seq: 1 }), { timeout: 2_000 }),
      /Permissions Violation/,
      "a direct get",
    );
    await assert.rejects(njsm.consumers.list(EVENT_STREAM).next(), /Permissions Violation/, "a consumer list");
    await assert.rejects(nc.request(`$JS.API.CONSUMER.NAMES.${EVENT_STREAM}`, "", { timeout: 2_000 }), /Permissions Violation/, "consumer names");
  });

  it("node-1 hears the body-less ConfigMap/Secret notices, not their events, and cannot publish a notice", async () => {
    const nc = await as("node-1-notices", node1File);
    const errors = permissionErrors(nc);
    const events = collect(nc.subscribe("choreo.ev.configmaps.>"));
    const notices = collect(nc.subscribe("choreo.notice.configmaps.>"));
    const secretNotices = collect(nc.subscribe("choreo.notice.secrets.>"));
    await nc.flush();
    await waitFor(() => errors.some((e) => /Permissions Violation for Subscription to "choreo\.ev\.configmaps\.>"/.test(e)), {
      timeoutMs: 10_000,
      message: `the server's refusal (${errors.join("; ")})`,
    });
    nc.publish("choreo.notice.configmaps.default.forged");
    await waitFor(() => errors.some((e) => /Permissions Violation for Publish to "choreo\.notice\.configmaps\.default\.forged"/.test(e)), {
      timeoutMs: 10_000,
      message: `the server's refusal (${errors.join("; ")})`,
    });
    api.publish("choreo.ev.configmaps.default.cfg", "the object");
    api.publish("choreo.notice.configmaps.default.cfg");
    api.publish("choreo.notice.secrets.default.s");
    await waitFor(() => notices.length === 1 && secretNotices.length === 1, { timeoutMs: 10_000, message: "the notices" });
    assert.deepEqual([events, notices], [[], ["choreo.notice.configmaps.default.cfg"]]);
  });

  it("node-1 hears its own pods' live (republished) subjects, not node-2's, and nobody can publish a live event", async () => {
    const nc = await as("node-1-live", node1File);
    const errors = permissionErrors(nc);
    const own = collect(nc.subscribe("choreo.live.pods.node-1.>"));
    collect(nc.subscribe("choreo.live.pods.node-2.>"));
    await nc.flush();
    await waitFor(() => errors.some((e) => /Permissions Violation for Subscription to "choreo\.live\.pods\.node-2\.>"/.test(e)), {
      timeoutMs: 10_000,
      message: `the server's refusal (${errors.join("; ")})`,
    });
    // A forged live event, from node-1's credentials: refused by the server, heard by no one.
    nc.publish("choreo.live.pods.node-1.default.forged", "forged");
    await waitFor(() => errors.some((e) => /Permissions Violation for Publish to "choreo\.live\.pods\.node-1\.default\.forged"/.test(e)), {
      timeoutMs: 10_000,
      message: `the server's refusal (${errors.join("; ")})`,
    });
    // The stream republishes what the api stores.
    const js = jetstream(api);
    await js.publish("choreo.ev.pods.node-2.default.c", "c");
    await js.publish("choreo.ev.pods.node-1.default.d", "d");
    await waitFor(() => own.length === 1, { timeoutMs: 10_000, message: "node-1's live event" });
    assert.deepEqual(own, ["choreo.live.pods.node-1.default.d"]);
  });
  it("each user hears only its own inboxes: node-1 cannot listen on every inbox, node-2's or the api's, nor hear node-2's pulled events or replies", async () => {
    const responder = api.subscribe("choreo.api.get", { callback: (_e, m) => void m.respond("secret reply") });
    await api.flush();
    const spy = await as("node-1-spy", node1File);
    const errors = permissionErrors(spy);
    const heard = [inboxPrefixOf("node-node-2"), inboxPrefixOf(API_NATS_USER), "_INBOX"].map((p) => collect(spy.subscribe(`${p}.>`)));
    await spy.flush();
    for (const p of ["_INBOX_node-node-2", "_INBOX_choreo", "_INBOX"])
      await waitFor(() => errors.some((e) => e.includes(`Permissions Violation for Subscription to "${p}.>"`)), {
        timeoutMs: 10_000,
        message: `the refusal of ${p}.> (${errors.join("; ")})`,
      });
    // node-2 asks the api and pulls its pods' events: all of it arrives under node-2's own prefix, to node-2 only.
    const node2 = await as("node-2", node2File);
    assert.equal((await node2.request("choreo.api.get", "", { timeout: 10_000 })).string(), "secret reply");
    const consumer = await jetstream(node2).consumers.get(EVENT_STREAM, { filter_subjects: podsOnNodeFilter("node-2"), deliver_policy: DeliverPolicy.All });
    const batch = await consumer.fetch({ max_messages: 1, expires: 10_000 });
    const pulled: string[] = [];
    for await (const m of batch) pulled.push(m.subject);
    assert.deepEqual(pulled, ["choreo.ev.pods.node-2.default.b"]);
    // node-1's own requests still get their replies (under its prefix).
    const own = await as("node-1-own", node1File);
    assert.equal((await own.request("choreo.api.get", "", { timeout: 10_000 })).string(), "secret reply");
    await spy.flush();
    assert.deepEqual(heard, [[], [], []]);
    responder.unsubscribe();
  });
});
