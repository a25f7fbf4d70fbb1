// test-tier: servers
// The Redis primary lost under a running cluster: Redis is a primary, two
// replicas and three Sentinels (kit startRedisHa); two api replicas reach it
// through the sentinels with write durability "log" (a write is answered
// once the event log holds it). A writer creates ConfigMaps all along and
// records every acknowledged one; an RC is scaled from 2 to 6 on hollow
// nodes; then the primary is killed -9. The sentinels promote a replica, the
// api follows it, and a promoted replica that lagged is repaired from the
// log: every acknowledged write is there at its revision, the RC converges,
// Redis' revision equals the log's last sequence once idle, and no node is
// taken for failed. The time from the kill to the first accepted write is
// printed.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { unwrap } from "@choreo/kit";
import { streamState } from "@choreo/kit/bus";
import type { Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Pod, ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { startRedisHa, waitFor, type RedisHaHandle } from "@choreo/kit/testing";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";

const NODES = 2;
const metaOf = (o: ApiObject) => (unwrap(o) as { metadata?: { name: string; resourceVersion: string } }).metadata!;
const isReady = (p: Pod): boolean => p.status?.conditions.some((c) => c.type === "Ready" && c.status === "True") ?? false;

describe("kill -9 of the Redis primary (Sentinel failover, durability log)", () => {
  let ha: RedisHaHandle;
  let c: TestCluster;
  let r: Redis;
  let jsm: JetStreamManager;

  before(async () => {
    ha = await startRedisHa({ replicas: 2, sentinels: 3 });
    c = await startCluster({
      apis: 2,
      env: {
        CHOREO_REDIS_URL: ha.url,
        CHOREO_REDIS_CREDENTIALS: ha.credentialsFile,
        CHOREO_REDIS_SENTINEL_CREDENTIALS: ha.sentinelCredentialsFile,
        CHOREO_WRITE_DURABILITY: "log",
      },
      actors: [
        { name: "node-agent", env: { CHOREO_HOLLOW_NODES: String(NODES) } },
        { name: "scheduler" },
        { name: "replication", env: { CHOREO_EVENTS: "0" } },
      ],
    });
    r = ha.client();
    jsm = await jetstreamManager(c.nc);
  });
  after(async () => {
    r?.disconnect();
    await c?.stop();
    await ha?.stop();
  });

  const readyPods = async (): Promise<number> =>
    (await c.client.list("pods", { namespace: "default", labelSelector: "app=web" })).items
      .map((o) => unwrap(o) as Pod)
      .filter((p) => !p.metadata?.deletionTimestamp && isReady(p)).length;

  it("the api follows the promoted replica; every acknowledged write survives; the RC converges; no node taken for failed", () =>
    withLogsOnFailure(c, async () => {
      await waitFor(async () => (await c.client.list("nodes")).items.length === NODES, { timeoutMs: 30_000, message: "hollow nodes" });
      await c.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "ReplicationController",
          metadata: { name: "web", namespace: "default" },
          spec: {
            replicas: 2,
            selector: { app: "web" },
            template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "app", image: "nginx" }] } },
          },
        }),
      );
      await waitFor(async () => (await readyPods()) === 2, { timeoutMs: 60_000, message: "2 ready pods" });

      // The writer: one ConfigMap after another, each acknowledged one recorded with its revision.
      const acknowledged = new Map<string, string>();
      let failed = 0;
      let writing = true;
      let firstAfterKill = 0;
      let killedAt = 0;
      const writer = (async () => {
        for (let i = 0; writing; i++) {
          try {
            const m = metaOf(
              await c.client.create(
                fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: `w-${i}`, namespace: "default" }, data: { i: String(i) } }),
              ),
            );
            acknowledged.set(m.name, m.resourceVersion);
            if (killedAt && !firstAfterKill) firstAfterKill = Date.now();
          } catch {
            failed++;
          }
          await new Promise((res) => setTimeout(res, 20));
        }
      })();
      try {
        await waitFor(() => acknowledged.size >= 20, { timeoutMs: 30_000, message: "writes before the fault" });
        const rc = unwrap(await c.client.get("replicationcontrollers", "default", "web")) as ReplicationController;
        rc.spec!.replicas = 6;
        await c.client.update({ kind: { $case: "replicationController", value: rc } });
        const old = await ha.primary();
        await old.kill();
        killedAt = Date.now();
        const promoted = await ha.failedOverFrom(old.port);
        const failedOverAt = Date.now();
        await waitFor(() => firstAfterKill > 0, { timeoutMs: 60_000, message: "a write accepted after the failover" });
        console.log(
          `redis failover: primary ${old.port} → ${promoted.port} named after ${failedOverAt - killedAt} ms; writes accepted again ${firstAfterKill - killedAt} ms after the kill (${failed} refused meanwhile)`,
        );
        await waitFor(() => acknowledged.size >= 60, { timeoutMs: 60_000, message: "writes after the fault" });
      } finally {
        writing = false;
        await writer;
      }

      // Every acknowledged write, at its revision.
      const lost: string[] = [];
      for (const [name, rv] of acknowledged) {
        try {
          const got = metaOf(await c.client.get("configmaps", "default", name)).resourceVersion;
          if (got !== rv) lost.push(`${name}@${rv} (now ${got})`);
        } catch (err) {
          lost.push(`${name}@${rv} (${String(err)})`);
        }
      }
      assert.deepEqual(lost, [], `every acknowledged write survives (${acknowledged.size} acknowledged)`);
      await waitFor(async () => (await readyPods()) === 6, { timeoutMs: 90_000, message: "the RC scaled to 6 ready pods" });
      // Stream sequence == revision: once idle, Redis' revision is the log's last sequence.
      await waitFor(async () => Number(await r.get("{choreo}:rev")) === (await streamState(jsm)).lastRevision, {
        timeoutMs: 30_000,
        message: "Redis' revision equal to the log's last sequence",
      });
      const failures = (await c.client.list("events")).items
        .map((o) => unwrap(o) as { reason?: string; involvedObject?: { name: string } })
        .filter((e) => e.reason === "NodeNotReady" || e.reason === "TaintManagerEviction")
        .map((e) => `${e.reason} ${e.involvedObject?.name}`);
      assert.deepEqual(failures, [], "no node taken for failed");
    }));
});
