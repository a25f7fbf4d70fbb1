// test-tier: servers
// Invariant 2: no lost, no duplicated events. The api is killed -9 while a
// writer runs, also at the fault points between the Redis write and the
// publish and between the publish and the trim; afterwards the event log
// holds every revision exactly once, in order, and ends at Redis' revision.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { jetstreamManager, jetstream, DeliverPolicy } from "@nats-io/jetstream";
import { ApiError } from "@choreo/kit";
import { EVENT_STREAM, decodeEvent, streamState } from "@choreo/kit/bus";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, type TestCluster } from "./support/cluster.js";

const event = (i: number) =>
  fromKubeJson({
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: `e${i}`, namespace: "default" },
    involvedObject: { kind: "Pod", name: `p${i}`, namespace: "default" },
    reason: "Test",
    message: `write ${i}`,
  });

describe("the event log across api crashes", () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => {
    await c?.stop();
  });

  it("holds every change exactly once, in revision order, with the stream sequence equal to Redis' revision", async () => {
    const acked = new Set<string>();
    let stop = false;
    let i = 0;
    const writer = (async () => {
      while (!stop) {
        const n = i++;
        for (;;) {
          try {
            await c.client.create(event(n));
            break;
          } catch (err) {
            // Written before the crash, reply lost: the retry finds it.
            if (err instanceof ApiError && err.reason === "AlreadyExists") break;
            if (stop) return;
            await new Promise((r) => setTimeout(r, 50));
          }
        }
        acked.add(`e${n}`);
      }
    })();

    // Plain kills, and runs that crash themselves at the relay's fault points.
    const faults: Record<string, string>[] = [
      {},
      { CHOREO_FAULT_CRASH_BEFORE_PUBLISH_EVERY: "3" },
      {},
      { CHOREO_FAULT_CRASH_AFTER_PUBLISH_EVERY: "3" },
      {},
      {},
    ];
    for (const env of faults) {
      const before = acked.size;
      await waitFor(() => acked.size >= before + 20 || !c.apis[0]!.process.isRunning(), { timeoutMs: 60_000, message: "progress" });
      await c.killApi(0);
      await c.startApi(0, env);
    }
    await waitFor(() => acked.size >= 300, { timeoutMs: 60_000, message: "300 writes" });
    if (!c.apis[0]!.process.isRunning()) await c.startApi(0);
    stop = true;
    await writer;
    // A fault run may have crashed again at the end; finish with a clean one.
    await c.killApi(0);
    await c.startApi(0);

    const redis = new Redis(c.redis.url);
    const jsm = await jetstreamManager(c.nc);
    const rev = Number(await redis.get("{choreo}:rev"));
    await waitFor(async () => (await streamState(jsm)).lastRevision === rev, { timeoutMs: 30_000, message: "relay caught up" });
    redis.disconnect();

    const state = await streamState(jsm);
    assert.equal(state.firstRevision, 1);
    assert.equal(state.messages, rev, "one message per revision");
    const consumer = await jetstream(c.nc).consumers.get(EVENT_STREAM, { deliver_policy: DeliverPolicy.All });
    const seen = new Set<string>();
    let expected = 1;
    const messages = await consumer.consume();
    for await (const m of messages) {
      const ev = decodeEvent(m.data);
      assert.equal(m.seq, expected, "no gap");
      assert.equal(ev.revision, m.seq, "stream sequence == revision");
      assert.equal(ev.object?.kind?.value.metadata?.resourceVersion, String(m.seq));
      const name = ev.object?.kind?.value.metadata?.name ?? "";
      if (ev.object?.kind?.$case === "event") {
        assert.ok(!seen.has(name), `${name} created twice`);
        seen.add(name);
      }
      expected++;
      if (m.seq === rev) break;
    }
    await messages.close();
    for (const name of acked) assert.ok(seen.has(name), `acknowledged ${name} is on the log`);
  });
});
