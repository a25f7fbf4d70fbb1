// test-tier: servers
// The event stream replicated on a 3-server NATS cluster (R3): kill -9 of the
// stream's leader while revisions are published the relay's way (each
// expecting the stream's last sequence to be the one before it; after a
// failed or unanswered publish, the stream is asked what it holds). The
// publishes are acknowledged again once another server leads, no revision is
// lost or stored twice, a watcher sees every revision once and in order, and
// the killed server, started again, catches up (it then leads and answers
// every revision itself).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JetStreamManager } from "@nats-io/jetstream";
import { WatchEvent } from "../gen/choreo/api/v1/api.js";
import { silentLogger } from "../log/index.js";
import { startNatsCluster, type NatsClusterHandle } from "../process/nats-cluster.js";
import { waitFor } from "../process/process.js";
import { consumeEvents, decodeEvent, encodeEvent } from "./events.js";
import { connectBus, ensureEventStream, hasPodRepublish, streamState } from "./stream.js";
import { ALL_EVENTS, EVENT_STREAM } from "./subjects.js";

const N = 300;
const KILL_AT = 100;

/** The stream's leader and replicas, as stream info reports them. */
async function placement(jsm: JetStreamManager): Promise<{ leader?: string; replicas: { name: string; current: boolean; lag?: number }[] }> {
  const info = await jsm.streams.info(EVENT_STREAM);
  return { leader: info.cluster?.leader, replicas: info.cluster?.replicas ?? [] };
}

describe("the event stream on a 3-server NATS cluster (R3)", () => {
  let cluster: NatsClusterHandle;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const ac = new AbortController();
  before(async () => {
    cluster = await startNatsCluster({ size: 3 });
    // The comma-separated list of the three, with the credentials: what CHOREO_NATS_URL carries.
    nc = await connectBus(cluster.url, "nats-cluster-test");
  });
  after(async () => {
    ac.abort();
    await nc?.close();
    await cluster?.stop();
  });

  it("a stream made with one replica is scaled to three, its other settings kept", async () => {
    jsm = await ensureEventStream(nc, { retention: 10_000 });
    assert.equal((await jsm.streams.info(EVENT_STREAM)).config.num_replicas, 1);
    await ensureEventStream(nc, { retention: 10_000, replicas: 3, log: silentLogger() });
    const info = await jsm.streams.info(EVENT_STREAM);
    assert.equal(info.config.num_replicas, 3);
    assert.equal(info.config.max_msgs, 10_000);
    assert.equal(info.config.duplicate_window, 2 * 60 * 1_000_000_000);
    assert.ok(await hasPodRepublish(jsm), "the RePublish kept");
    // A leader and two followers, all current.
    await waitFor(
      async () => {
        const p = await placement(jsm);
        return p.leader && p.replicas.length === 2 && p.replicas.every((r) => r.current);
      },
      { timeoutMs: 30_000, message: "the R3 stream's leader and two current followers" },
    );
  });

  it("kill -9 of the stream's leader while publishing: acknowledged again, nothing lost or twice, in order; the killed server catches up", async () => {
    const js = jetstream(nc, { timeout: 2_000 });
    const seen: number[] = [];
    // As an informer: a watch that failed (no stream leader for a moment) starts again after the last revision it delivered.
    void (async () => {
      while (!ac.signal.aborted) {
        try {
          for await (const ev of consumeEvents({ nc, jsm, filter: ALL_EVENTS, fromRevision: seen.at(-1) ?? 0, signal: ac.signal })) seen.push(ev.revision);
        } catch {
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    })();

    /** The revision stored at `seq`, asked until the stream answers. */
    const storedAt = async (seq: number): Promise<number> =>
      waitFor(
        async () => {
          const m = await jsm.streams.getMessage(EVENT_STREAM, { seq });
          return m ? decodeEvent(m.data).revision : undefined;
        },
        {
          timeoutMs: 60_000,
          message: `the stream's message ${seq}`,
        },
      );
    let last = 0;
    let killed: { name: string; at: number } | undefined;
    let firstAckAfterKill = 0;
    let refusals = 0;
    for (let rev = 1; rev <= N; rev++) {
      if (rev === KILL_AT + 1) {
        const leader = (await placement(jsm)).leader;
        assert.ok(leader, "the stream has a leader");
        await cluster.member(leader).kill();
        killed = { name: leader, at: Date.now() };
      }
      const deadline = Date.now() + 60_000;
      for (;;) {
        assert.ok(Date.now() < deadline, `revision ${rev} not stored in 60 s`);
        try {
          const ack = await js.publish(
            `choreo.ev.configmaps.default.c${rev}`,
            encodeEvent(WatchEvent.fromPartial({ type: "ADDED", revision: rev })),
            // The relay's way: the stream refuses the message unless its last sequence is rev-1.
            { expect: { lastSequence: rev - 1 } },
          );
          assert.equal(ack.seq, rev, "stored at its own sequence");
          break;
        } catch (err) {
          if (err instanceof assert.AssertionError) throw err;
          refusals++;
          // No ack (a timeout, no leader yet) or a refusal: ask the stream what it holds, as the relay re-reads it.
          const held = await waitFor(async () => (await streamState(jsm)).lastRevision + 1, { timeoutMs: 60_000, message: "the stream's state" });
          if (held - 1 === rev) {
            // Stored, its ack lost: the message there is this revision, not another.
            assert.equal(await storedAt(rev), rev);
            break;
          }
          assert.equal(held - 1, rev - 1, "the stream holds every revision before this one and none after");
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      if (killed && !firstAckAfterKill) firstAckAfterKill = Date.now();
      last = rev;
    }
    assert.ok(killed);
    console.log(
      `nats-cluster: leader ${killed.name} killed; publishes acknowledged again after ${firstAckAfterKill - killed.at} ms (${refusals} failed tries)`,
    );
    assert.ok(refusals > 0, "the kill interrupted the publishing (else this test proves nothing)");

    const state = await streamState(jsm);
    assert.deepEqual({ first: state.firstRevision, last: state.lastRevision, messages: state.messages }, { first: 1, last: N, messages: N });
    for (let seq = 1; seq <= N; seq++) assert.equal(await storedAt(seq), seq, `sequence ${seq} holds revision ${seq}`);
    await waitFor(() => seen.length >= N, { timeoutMs: 60_000, message: `the watcher to see ${N} revisions (saw ${seen.length})` });
    assert.deepEqual(
      seen,
      Array.from({ length: N }, (_, i) => i + 1),
      "every revision once, in order",
    );
    assert.equal(last, N);

    // The killed server started again catches up: current, no lag …
    const back = cluster.member(killed.name);
    await back.restart();
    await waitFor(
      async () => {
        const p = await placement(jsm);
        const all = p.leader ? [...p.replicas.map((r) => ({ ...r })), { name: p.leader, current: true, lag: 0 }] : [];
        const r = all.find((x) => x.name === killed!.name);
        return all.length === 3 && r?.current && !r.lag;
      },
      { timeoutMs: 60_000, message: `${killed.name} to be a current replica again` },
    );
    // … and, made the leader, answers every revision from its own store.
    await waitFor(
      async () => {
        const p = await placement(jsm);
        if (p.leader === killed!.name) return true;
        if (p.leader) await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${EVENT_STREAM}`, undefined, { timeout: 5_000 });
        return false;
      },
      { timeoutMs: 120_000, intervalMs: 1_000, message: `${killed.name} to lead the stream` },
    );
    const again = await streamState(jsm);
    assert.equal(again.lastRevision, N);
    for (let seq = 1; seq <= N; seq++) assert.equal(await storedAt(seq), seq, `${killed.name} holds revision ${seq}`);
  });
});
