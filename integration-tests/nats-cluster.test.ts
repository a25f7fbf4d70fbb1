// test-tier: servers
// The control plane on a 3-server NATS cluster with the event stream
// replicated (CHOREO_EVENT_REPLICAS=3): the stream's leader is killed -9 and
// an RC is scaled from 2 to 8 at once, on 2 hollow nodes with the scheduler
// and the replication actor. The api, the actors and the node agent reconnect
// to the other servers; the RC converges with every pod Running, the stream's
// last sequence equals Redis' revision once the writes settle (nothing lost,
// nothing published twice), and no node is taken for failed (no NodeNotReady
// Event, every node Ready). The time from the kill to events flowing again
// (the scale's own event seen by a watcher) is printed; the killed server is
// started again and catches up.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { unwrap } from "@choreo/kit";
import { ALL_EVENTS, consumeEvents, EVENT_STREAM, streamState } from "@choreo/kit/bus";
import type { Node, Pod, ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";

const NODES = 2;
const FROM = 2;
const TO = 8;

describe("an RC scaled up while the event stream's leader (R3, 3 NATS servers) is killed -9", () => {
  let c: TestCluster;
  let jsm: JetStreamManager;
  let redis: Redis;
  const ac = new AbortController();
  before(async () => {
    c = await startCluster({
      natsCluster: 3,
      env: { CHOREO_EVENT_REPLICAS: "3" },
      actors: [
        { name: "node-agent", env: { CHOREO_HOLLOW_NODES: String(NODES) } },
        { name: "scheduler" },
        { name: "replication", env: { CHOREO_EVENTS: "0" } },
      ],
    });
    jsm = await jetstreamManager(c.nc);
    redis = new Redis(c.redis.url, { maxRetriesPerRequest: null });
  });
  after(async () => {
    ac.abort();
    redis?.disconnect();
    await c?.stop();
  });

  const webPods = async (): Promise<Pod[]> =>
    (await c.client.list("pods", { namespace: "default" })).items
      .map((o) => unwrap(o) as Pod)
      .filter((p) => p.metadata?.labels["app"] === "web" && !p.metadata.deletionTimestamp);
  const rc = async (): Promise<ReplicationController> => unwrap(await c.client.get("replicationcontrollers", "default", "web")) as ReplicationController;

  it("converges, every pod Running, stream sequence == revision, no node taken for failed", async () => {
    await withLogsOnFailure(c, async () => {
      const info = await jsm.streams.info(EVENT_STREAM);
      assert.equal(info.config.num_replicas, 3, "the api made the event stream R3");
      await waitFor(async () => (await c.client.list("nodes")).items.length === NODES, { timeoutMs: 30_000, message: `${NODES} hollow nodes` });
      await c.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "ReplicationController",
          metadata: { name: "web", namespace: "default" },
          spec: {
            replicas: FROM,
            selector: { app: "web" },
            template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "app", image: "nginx" }] } },
          },
        }),
      );
      await waitFor(async () => (await webPods()).filter((p) => p.status?.phase === "Running").length === FROM, {
        timeoutMs: 60_000,
        message: `${FROM} Running pods`,
      });

      // A watcher of every event, from now on: when did each revision reach it.
      const seenAt = new Map<number, number>();
      const from = (await streamState(jsm)).lastRevision;
      // As an informer does: a watch that failed (JetStream without a stream leader for a moment) is started again after the last revision seen.
      let watchFailures = 0;
      void (async () => {
        let last = from;
        while (!ac.signal.aborted) {
          try {
            for await (const ev of consumeEvents({ nc: c.nc, jsm, filter: ALL_EVENTS, fromRevision: last, signal: ac.signal })) {
              seenAt.set(ev.revision, Date.now());
              last = ev.revision;
            }
          } catch {
            watchFailures++;
            await new Promise((r) => setTimeout(r, 500));
          }
        }
      })();

      const leader = (await jsm.streams.info(EVENT_STREAM)).cluster?.leader;
      assert.ok(leader, "the stream has a leader");
      const killed = c.natsCluster!.member(leader);
      await killed.kill();
      const killedAt = Date.now();
      // The scale, written while the stream has no leader: the api retries it (a write is acknowledged once stored in Redis).
      const scaled = await waitFor(() => c.client.updateScale("replicationcontrollers", "default", "web", TO), {
        timeoutMs: 60_000,
        message: "the scale to be accepted",
      });
      const scaleRevision = Number(scaled.metadata?.resourceVersion);
      assert.ok(scaleRevision > from);
      const acceptedAt = Date.now();
      const seen = await waitFor(() => seenAt.get(scaleRevision), { timeoutMs: 60_000, message: `the scale's event (revision ${scaleRevision})` });
      console.log(
        `nats-cluster: leader ${leader} killed; the scale accepted after ${acceptedAt - killedAt} ms, its event seen after ${seen - killedAt} ms (${watchFailures} watches failed); new leader ${(await jsm.streams.info(EVENT_STREAM)).cluster?.leader}`,
      );

      await waitFor(
        async () => {
          const pods = await webPods();
          const r = await rc();
          return pods.length === TO && pods.every((p) => p.status?.phase === "Running") && r.status?.readyReplicas === TO;
        },
        { timeoutMs: 120_000, message: `${TO} Running pods and the RC's status` },
      );

      // Stream sequence == revision: equal at a moment when Redis' revision did not move around the stream's read.
      await waitFor(
        async () => {
          const before = Number(await redis.get("{choreo}:rev"));
          const last = (await streamState(jsm)).lastRevision;
          const after = Number(await redis.get("{choreo}:rev"));
          return before === after && last === after;
        },
        { timeoutMs: 60_000, message: "the stream's last sequence to equal Redis' {choreo}:rev" },
      );

      const failures = (await c.client.list("events")).items
        .map((o) => unwrap(o) as { reason?: string; involvedObject?: { name: string } })
        .filter((e) => e.reason === "NodeNotReady" || e.reason === "TaintManagerEviction")
        .map((e) => `${e.reason} ${e.involvedObject?.name}`);
      assert.deepEqual(failures, [], "no node taken for failed");
      for (const o of (await c.client.list("nodes")).items) {
        const n = unwrap(o) as Node;
        assert.ok(
          n.status?.conditions.some((x) => x.type === "Ready" && x.status === "True"),
          `${n.metadata?.name} Ready`,
        );
      }

      // The killed server started again catches up with the stream.
      await killed.restart();
      await waitFor(
        async () => {
          const i = await jsm.streams.info(EVENT_STREAM);
          const r = i.cluster?.replicas?.find((x) => x.name === leader);
          return i.cluster?.leader === leader || (r?.current && !r.lag);
        },
        { timeoutMs: 60_000, message: `${leader} to catch up` },
      );
    });
  });
});
