// test-tier: servers
// Redis loses its tail: redis-server comes back from an older AOF (kill -9,
// an earlier copy of its appendonlydir put back), while the event log holds
// the revisions it lost. Under two running api replicas, and again with the
// api replicas killed and started onto it: every acknowledged write comes
// back at its revision (an update, a delete, a pod in its node's index, a
// NodePort Service holding its port), no request is answered from the older
// state meanwhile (a poller never sees the older value: 503 or the current
// one), and the next write takes the log's last sequence + 1 — stream
// sequence == revision.
import assert from "node:assert/strict";
import { cpSync, rmSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { ApiError, unwrap } from "@choreo/kit";
import { streamState } from "@choreo/kit/bus";
import type { Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import type { ConfigMap, Pod, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";

const cm = (name: string, v: string) => fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data: { v } });
const metaOf = (o: ApiObject) => (unwrap(o) as { metadata?: { name: string; resourceVersion: string } }).metadata!;

describe("Redis restored from an older AOF: the api repairs it from the event log", () => {
  let c: TestCluster;
  let r: Redis;
  let jsm: JetStreamManager;
  const aof = () => path.join(c.redis.dir, "appendonlydir");
  const backup = () => path.join(c.dir, "aof-backup");

  before(async () => {
    c = await startCluster({ apis: 2 });
    r = new Redis(c.redis.url, { maxRetriesPerRequest: null });
    r.on("error", () => undefined);
    jsm = await jetstreamManager(c.nc);
  });
  after(async () => {
    r?.disconnect();
    await c?.stop();
  });

  /** Waits until the relay published all Redis holds; returns that revision. */
  async function published(): Promise<number> {
    let rev = 0;
    await waitFor(
      async () => {
        rev = Number(await r.get("{choreo}:rev"));
        return (await streamState(jsm)).lastRevision === rev;
      },
      { timeoutMs: 30_000, message: "the event log caught up with Redis" },
    );
    return rev;
  }

  /** A consistent copy of Redis' AOF as it is now (rewritten, so the copy is whole). */
  async function snapshot(): Promise<number> {
    const rev = await published();
    await r.bgrewriteaof();
    await waitFor(async () => /aof_rewrite_in_progress:0[\s\S]*aof_rewrite_scheduled:0/.test(await r.info("persistence")), {
      timeoutMs: 30_000,
      message: "AOF rewritten",
    });
    rmSync(backup(), { recursive: true, force: true });
    cpSync(aof(), backup(), { recursive: true });
    return rev;
  }

  /** kill -9 of redis-server, the older AOF put back, started again. */
  async function restoreOlder(): Promise<void> {
    await c.redis.kill();
    rmSync(aof(), { recursive: true, force: true });
    cpSync(backup(), aof(), { recursive: true });
    await c.redis.restart();
  }

  /** The writes after the snapshot: what the repair must bring back. */
  async function writeAfter(tag: string): Promise<{ expected: Map<string, string>; gone: string; pod: Pod; nodePort: number; svc: string }> {
    const expected = new Map<string, string>();
    const first = unwrap(await c.client.get("configmaps", "default", `${tag}-0`)) as ConfigMap;
    first.data["v"] = "2";
    expected.set(
      `${tag}-0`,
      metaOf(await c.client.update(fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: first.metadata, data: first.data }))).resourceVersion,
    );
    await c.client.delete("configmaps", "default", `${tag}-1`);
    for (let i = 0; i < 5; i++) {
      const m = metaOf(await c.client.create(cm(`${tag}-new-${i}`, "1")));
      expected.set(m.name, m.resourceVersion);
    }
    const pod = unwrap(
      await c.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: `${tag}-pod`, namespace: "default" },
          spec: { nodeName: `${tag}-node`, containers: [{ name: "c", image: "nginx" }] },
        }),
      ),
    ) as Pod;
    const svc = unwrap(
      await c.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: `${tag}-svc`, namespace: "default" },
          spec: { type: "NodePort", selector: { app: tag }, ports: [{ port: 80 }] },
        }),
      ),
    ) as Service;
    return { expected, gone: `${tag}-1`, pod, nodePort: svc.spec?.ports[0]?.nodePort ?? 0, svc: `${tag}-svc` };
  }

  async function checkRepaired(tag: string, w: Awaited<ReturnType<typeof writeAfter>>, logRevision: number): Promise<void> {
    await waitFor(
      async () => {
        try {
          return metaOf(await c.client.get("configmaps", "default", `${tag}-0`)).resourceVersion === w.expected.get(`${tag}-0`);
        } catch {
          return false;
        }
      },
      { timeoutMs: 30_000, message: "the api answers with the repaired store" },
    );
    // (The api's own writers — the kubernetes Endpoints — may have written since: at or above, never below.)
    assert.ok(Number(await r.get("{choreo}:rev")) >= logRevision, "Redis' revision reached the log's last sequence");
    for (const [name, rv] of w.expected) assert.equal(metaOf(await c.client.get("configmaps", "default", name)).resourceVersion, rv, name);
    assert.equal((unwrap(await c.client.get("configmaps", "default", `${tag}-0`)) as ConfigMap).data["v"], "2");
    await assert.rejects(c.client.get("configmaps", "default", w.gone), (e: unknown) => e instanceof ApiError && e.status.code === 404);
    const onNode = await c.client.list("pods", { fieldSelector: `spec.nodeName=${tag}-node` });
    assert.deepEqual(
      onNode.items.map((o) => (unwrap(o) as Pod).metadata?.uid),
      [w.pod.metadata?.uid],
      "the pod is in its node's index",
    );
    // The api's allocation key (services/api/src/storage/keys.ts).
    assert.equal(await r.get(`{choreo}:nodeport:${w.nodePort}`), `default/${w.svc}`, "the Service holds its node port again");
    // The next write: a revision after the log's last, published at that sequence (stream sequence == revision).
    const next = Number(metaOf(await c.client.create(cm(`${tag}-after`, "1"))).resourceVersion);
    assert.ok(next > logRevision, `${next} > ${logRevision}`);
    await waitFor(async () => (await streamState(jsm)).lastRevision >= next, { timeoutMs: 30_000, message: "published" });
    const msg = await jsm.streams.getMessage("CHOREO_EVENTS", { seq: next });
    assert.match(msg?.subject ?? "", new RegExp(`${tag}-after`), "stream sequence == revision");
  }

  it("under two running api replicas: nothing is answered from the older state, every acknowledged write comes back", () =>
    withLogsOnFailure(c, async () => {
      for (let i = 0; i < 5; i++) await c.client.create(cm(`a-${i}`, "1"));
      await snapshot();
      const w = await writeAfter("a");
      const logRevision = await published();

      // A reader of a-0 all along: an error (503, or Redis away) or the current value, never the older one.
      const stale: string[] = [];
      let reads = 0;
      let refused = 0;
      let polling = true;
      const poller = (async () => {
        while (polling) {
          try {
            const got = unwrap(await c.client.get("configmaps", "default", "a-0")) as ConfigMap;
            reads++;
            if (got.data["v"] !== "2") stale.push(got.metadata?.resourceVersion ?? "");
          } catch (err) {
            if (err instanceof ApiError && err.status.code === 503) refused++;
          }
          await new Promise((res) => setTimeout(res, 10));
        }
      })();
      try {
        await restoreOlder();
        await checkRepaired("a", w, logRevision);
      } finally {
        polling = false;
        await poller;
      }
      console.log(`redis lost tail (running api): ${reads} reads, ${refused} answered 503, ${stale.length} stale`);
      assert.deepEqual(stale, [], "no read answered from the older state");
    }));

  it("api replicas killed and started onto the older Redis: they repair it before serving", () =>
    withLogsOnFailure(c, async () => {
      for (let i = 0; i < 5; i++) await c.client.create(cm(`b-${i}`, "1"));
      await snapshot();
      const w = await writeAfter("b");
      const logRevision = await published();
      await Promise.all([c.killApi(0), c.killApi(1)]);
      await restoreOlder();
      await Promise.all([c.startApi(0), c.startApi(1)]);
      await checkRepaired("b", w, logRevision);
    }));
});
