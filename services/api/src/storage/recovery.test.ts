// test-tier: servers
// Redis behind the event log (a lost tail): the store's fence and the repair
// from the log, over a real redis-server and nats-server (the api stack in
// this process). Redis losing everything (FLUSHALL) is the extreme lost
// tail: every object comes back at its revision with its index entries, a
// Service holds its ClusterIP and node port again, and the next write takes
// the revision after the log's last.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ApiError, unwrap } from "@choreo/kit";
import { streamState } from "@choreo/kit/bus";
import type { Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import type { ConfigMap, Pod, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { createRegistry } from "../registry/index.js";
import { startStack, type Stack } from "../testing/stack.js";
import { allocationKey, CHANGES_KEY, FENCE_KEY, REV_KEY } from "./keys.js";
import { RedisStore } from "./redis-store.js";
import { StoreRecovery } from "./recovery.js";

const cm = (name: string, v: string) => fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data: { v } });
const rvOf = (o: ApiObject): string => (unwrap(o) as { metadata?: { resourceVersion: string } }).metadata?.resourceVersion ?? "";

/** The ApiError's HTTP code, or 0 when `p` resolved. */
async function codeOf(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 0;
  } catch (err) {
    if (err instanceof ApiError) return err.status.code;
    throw err;
  }
}

describe("store recovery: Redis behind the event log", () => {
  let s: Stack;
  before(async () => {
    s = await startStack();
  });
  after(async () => {
    await s?.stop();
  });

  /** Waits until the relay published everything Redis holds (the log's last sequence == Redis' revision). */
  const published = async (): Promise<number> => {
    let rev = 0;
    await waitFor(
      async () => {
        rev = Number(await s.redisClient.get(REV_KEY));
        return (await streamState(s.jsm)).lastRevision === rev;
      },
      { timeoutMs: 20_000, message: "the log caught up with Redis" },
    );
    return rev;
  };

  it("a store behind its floor answers 503 to reads and writes, writes nothing, and calls for a repair", async () => {
    await s.client.create(cm("fenced-0", "a"));
    const rev = await published();
    const changes = await s.redisClient.xlen(CHANGES_KEY);
    let behind: [number, number] | undefined;
    const fenced = new RedisStore(s.redisClient, { floor: () => rev + 10, onBehind: (a, b) => (behind = [a, b]) });
    // A registry on the fenced store: reads and writes are refused with the Status.
    const reg = createRegistry({ store: fenced, serviceCidr: "10.96.0.0/16", log: silentLogger() }).store;
    const info = reg.resolve("configmaps");
    assert.equal(await codeOf(reg.read(info, "default", "fenced-0")), 503);
    assert.deepEqual(behind, [rev, rev + 10]);
    assert.equal(await codeOf(reg.page(info, { namespace: "default", limit: 0 })), 503);
    const err = await reg.createObject(info, unwrap(cm("fenced-1", "b"))).catch((x: unknown) => x);
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status.code, 503);
    assert.equal(err.status.reason, "ServiceUnavailable");
    assert.match(err.status.message, /behind the event log/);
    assert.equal(Number(await s.redisClient.get(REV_KEY)), rev, "no revision taken");
    assert.equal(await s.redisClient.xlen(CHANGES_KEY), changes, "no change record");
    assert.equal(await codeOf(s.client.get("configmaps", "default", "fenced-1")), 404, "nothing written");
    // The fence key (a repair in progress, set by another replica) refuses a store that knows no floor.
    await s.redisClient.set(FENCE_KEY, String(rev + 1));
    assert.equal(await codeOf(s.client.create(cm("fenced-2", "c"))), 503);
    await s.redisClient.del(FENCE_KEY);
    assert.equal(await codeOf(s.client.create(cm("fenced-2", "c"))), 0);
  });

  it("the floor is the one known when a read was sent: a log passing the store's revision meanwhile is no lost tail", async () => {
    await s.client.create(cm("race-0", "a"));
    const rev = await published();
    // Until the read is sent the floor is the store's revision; once it travels, the log (the watch cache) moves on.
    let sent = false;
    const racing = new RedisStore(s.redisClient, { floor: () => (sent ? rev + 5 : rev) });
    const get = racing.get("configmaps", "default", "race-0");
    sent = true;
    assert.ok(await get);
    sent = false;
    const list = racing.list("configmaps", { namespace: "default" });
    sent = true;
    assert.ok((await list).items.length > 0);
  });

  it("Redis emptied (FLUSHALL) → the repair puts every object back from the log at its revision, with its indexes and allocations", async () => {
    // Objects of several kinds: updated, deleted, a pod bound to a node (the node index), a NodePort Service (allocations).
    const c = s.client;
    for (let i = 0; i < 5; i++) await c.create(cm(`cm-${i}`, "1"));
    const v2 = unwrap(await c.get("configmaps", "default", "cm-0")) as ConfigMap;
    v2.data["v"] = "2";
    const updated = rvOf(await c.update(fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: v2.metadata, data: v2.data })));
    await c.delete("configmaps", "default", "cm-1");
    const pod = unwrap(
      await c.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "p", namespace: "default" },
          spec: { nodeName: "n1", containers: [{ name: "c", image: "nginx" }] },
        }),
      ),
    ) as Pod;
    const svc = unwrap(
      await c.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "web", namespace: "default" },
          spec: { type: "NodePort", selector: { app: "web" }, ports: [{ port: 80 }] },
        }),
      ),
    ) as Service;
    const nodePort = svc.spec?.ports[0]?.nodePort ?? 0;
    assert.ok(nodePort > 0 && svc.spec?.clusterIp);
    const rev = await published();
    const expected = new Map<string, string>();
    for (const o of (await c.list("configmaps", { namespace: "default" })).items) {
      const m = (unwrap(o) as ConfigMap).metadata!;
      expected.set(m.name, m.resourceVersion);
    }

    await s.redisClient.flushall();
    const recovery = new StoreRecovery({ redis: s.redisClient, nc: s.nc, jsm: s.jsm, registry: s.registry.store, log: silentLogger() });
    const result = await recovery.repair();
    assert.equal(result.storeRevision, 0);
    assert.equal(result.logRevision, rev);
    assert.ok(result.restored > 0);
    assert.equal(Number(await s.redisClient.get(REV_KEY)), rev, "the revision line is the log's");
    assert.equal(await s.redisClient.get(FENCE_KEY), null, "the fence is gone");

    // Every object at its revision; the deleted one gone; the pod in its node's index; the Service's allocations held.
    const got = new Map<string, string>();
    for (const o of (await c.list("configmaps", { namespace: "default" })).items) {
      const m = (unwrap(o) as ConfigMap).metadata!;
      got.set(m.name, m.resourceVersion);
    }
    assert.deepEqual([...got].sort(), [...expected].sort());
    assert.equal((unwrap(await c.get("configmaps", "default", "cm-0")) as ConfigMap).data["v"], "2");
    assert.equal(rvOf(await c.get("configmaps", "default", "cm-0")), updated);
    assert.equal(await codeOf(c.get("configmaps", "default", "cm-1")), 404);
    const onNode = await c.list("pods", { namespace: "default", fieldSelector: "spec.nodeName=n1" });
    assert.deepEqual(
      onNode.items.map((o) => (unwrap(o) as Pod).metadata?.uid),
      [pod.metadata?.uid],
    );
    assert.equal(await s.redisClient.get(allocationKey("node-port", String(nodePort))), "default/web");
    assert.equal(await s.redisClient.get(allocationKey("cluster-ip", svc.spec?.clusterIp ?? "")), "default/web");
    const taken = await codeOf(
      c.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "other", namespace: "default" },
          spec: { type: "NodePort", selector: { app: "x" }, ports: [{ port: 80, nodePort }] },
        }),
      ),
    );
    assert.equal(taken, 422, "the node port is held again");

    // A repair run again changes nothing; the next write takes the revision after the log's last (stream sequence == revision).
    assert.equal((await recovery.repair()).restored, 0);
    const next = rvOf(await c.create(cm("after", "1")));
    assert.equal(Number(next), rev + 1);
    await waitFor(async () => (await streamState(s.jsm)).lastRevision === rev + 1, { timeoutMs: 20_000, message: "published at its revision" });
  });
});
