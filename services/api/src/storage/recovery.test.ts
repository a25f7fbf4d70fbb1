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
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import { encodeEvent, EVENT_SIGNATURE_HEADER, eventSubject, streamState, EventSigner } from "@choreo/kit/bus";
import type { Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import type { ConfigMap, Pod, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { createRegistry } from "../registry/index.js";
import { startStack, type Stack } from "../testing/stack.js";
import { allocationKey, API_MEMBERS_KEY, CHANGES_KEY, FENCE_KEY, indexKey, objectKey, REBUILD_KEY, RELAY_LOCK_KEY, REPAIR_LOCK_KEY, REV_KEY } from "./keys.js";
import { RedisStore } from "./redis-store.js";
import { StoreRecovery, UntrustedLogError } from "./recovery.js";

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

  /**
   * Publishes a ConfigMap's ADDED at `revision` straight into the log (it must be the next sequence), as another
   * api replica's relay does when `signer` is the api's key; unsigned (a forgery) without one.
   */
  const publishAt = async (name: string, revision: number, signer?: EventSigner) => {
    const object = fromKubeJson({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name,
        namespace: "default",
        uid: randomUUID(),
        resourceVersion: String(revision),
        creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
      },
      data: { v: "from the log" },
    });
    const data = encodeEvent({ type: "ADDED", object, revision, status: undefined, prevLabels: {}, prevFields: {}, hasPrev: false });
    const h = headers();
    if (signer) h.set(EVENT_SIGNATURE_HEADER, signer.sign(data));
    return jetstream(s.nc).publish(eventSubject("configmaps", "default", name), data, { expect: { lastSequence: revision - 1 }, headers: h });
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

  it("a Redis split brain's leftover: the log holds another primary's change at a revision this store gave out → the relay finds it and the store is rebuilt from the log", async () => {
    const c = s.client;
    await c.create(cm("kept", "1"));
    const rev = await published();
    const keptRv = rvOf(await c.get("configmaps", "default", "kept"));
    // The other primary's write, acknowledged there: its relay published it at rev+1 first, signed with the api's key.
    const ack = await publishAt("from-other-primary", rev + 1, s.signer);
    assert.equal(ack.seq, rev + 1);
    // This store's own write takes the same revision: its relay's publish is refused (the log is at rev+1 already).
    const mine = await c.create(cm("this-primary", "not recorded"));
    assert.equal(rvOf(mine), String(rev + 1), "this store gave out the revision the log holds for another change");

    await waitFor(() => s.relay.diverged === 1 && s.recovery.stats.rebuilds === 1 && s.recovery.stats.repairs >= 1, {
      timeoutMs: 20_000,
      message: "the relay found the divergence and the store was rebuilt",
    });
    await waitFor(async () => Number(await s.redisClient.get(REV_KEY)) === rev + 1, { timeoutMs: 20_000, message: "the store at the log's revision" });
    // The store holds the log's change at rev+1, not its own; what both agreed on is there at its revision.
    assert.equal(await s.redisClient.hget(objectKey("configmaps", "default", "from-other-primary"), "r"), String(rev + 1));
    assert.equal(await s.redisClient.exists(objectKey("configmaps", "default", "this-primary")), 0, "its own unrecorded change is gone");
    assert.equal(await s.redisClient.hget(objectKey("configmaps", "default", "kept"), "r"), keptRv);
    assert.equal(await s.redisClient.get(FENCE_KEY), null, "the fence is gone");
    assert.equal(await s.redisClient.xlen(CHANGES_KEY), 0, "no record left to publish");
    // Writes go on from the log's revision: stream sequence == revision.
    const next = rvOf(await c.create(cm("after-rebuild", "1")));
    assert.equal(Number(next), rev + 2);
    await waitFor(async () => (await streamState(s.jsm)).lastRevision === rev + 2, { timeoutMs: 20_000, message: "published at its revision" });
    assert.equal(s.relay.diverged, 1, "found once");
  });
  it("a rebuild killed at any Redis command → the restarted api finishes it: the store is the log's, with nothing of its own left", async () => {
    const c = s.client;
    await c.create(cm("rb-kept", "1"));
    await c.create(cm("rb-newer", "1"));
    const rev = await published();
    const redis = s.redisClient;
    // The divergent store: its own object the log does not hold, a newer version of one it does, a revision past the log's.
    const diverge = async () => {
      await redis.hset(objectKey("configmaps", "default", "rb-own"), "v", "own bytes", "r", String(rev + 1));
      await redis.zadd(indexKey("configmaps"), 0, "default/rb-own");
      await redis.hset(objectKey("configmaps", "default", "rb-newer"), "r", String(rev + 1));
      await redis.set(REV_KEY, String(rev + 1));
    };
    /** The store's state: every key but the repair's own and the liveness keys, with its value. */
    const dump = async (): Promise<Map<string, string>> => {
      const out = new Map<string, string>();
      let cursor = "0";
      do {
        const [next, keys] = await redis.scan(cursor, "MATCH", "{choreo}:*", "COUNT", 1_000);
        cursor = next;
        for (const k of keys) {
          if ([FENCE_KEY, REBUILD_KEY, REPAIR_LOCK_KEY, RELAY_LOCK_KEY, API_MEMBERS_KEY].includes(k) || k.startsWith("{choreo}:bind:")) continue;
          const type = await redis.type(k);
          if (type === "string") out.set(k, String(await redis.get(k)));
          else if (type === "hash")
            out.set(
              k,
              JSON.stringify(
                Object.entries(await redis.hgetallBuffer(k))
                  .map(([f, v]) => [f, v.toString("hex")])
                  .sort(),
              ),
            );
          else if (type === "zset") out.set(k, JSON.stringify(await redis.zrange(k, 0, -1, "WITHSCORES")));
          else out.set(k, `${type} of ${type === "stream" ? await redis.xlen(k) : "?"}`);
        }
      } while (cursor !== "0");
      return out;
    };
    /** A client of this Redis that dies (refuses every command, sends nothing) at its command number `killAt`. */
    const dying = (killAt: number) => {
      const seen = { commands: 0, killed: false };
      const guard = () => {
        if (seen.killed || seen.commands++ === killAt) {
          seen.killed = true;
          return false;
        }
        return true;
      };
      const client = new Proxy(redis, {
        get(target, prop, receiver) {
          const v: unknown = Reflect.get(target, prop, receiver);
          if (typeof v !== "function" || prop === "defineCommand") return v;
          const fn = v as (...a: unknown[]) => unknown;
          if (prop === "multi" || prop === "pipeline") {
            return (...a: unknown[]) => {
              const p = fn.apply(target, a) as { exec: () => Promise<unknown> };
              const exec = p.exec.bind(p);
              p.exec = () => (guard() ? exec() : Promise.reject(new Error("killed")));
              return p;
            };
          }
          const killed = () => Promise.reject(new Error("killed"));
          // The lock's renewal runs on a timer: not a numbered step, but dead with the rest.
          const renewal = (a: unknown[]) => prop === "eval" && String(a[0]).includes("PEXPIRE");
          return (...a: unknown[]) => (renewal(a) ? (seen.killed ? killed() : fn.apply(target, a)) : guard() ? fn.apply(target, a) : killed());
        },
      });
      const store = new RedisStore(client);
      // The registry as it is, on the dying client's storage (the strategies' allocations go through the live one).
      const registry = new Proxy(s.registry.store, { get: (t, p, r) => (p === "storage" ? store : Reflect.get(t, p, r)) as unknown });
      return { seen, recovery: new StoreRecovery({ redis: client, nc: s.nc, jsm: s.jsm, registry, log: silentLogger(), verifier: s.verifier, lockMs: 300 }) };
    };
    const restarted = () =>
      new StoreRecovery({ redis, nc: s.nc, jsm: s.jsm, registry: s.registry.store, log: silentLogger(), verifier: s.verifier, lockMs: 300 });

    // A whole rebuild, counting its commands: the store it leaves is the log's.
    await diverge();
    const whole = dying(Number.MAX_SAFE_INTEGER);
    assert.ok(await whole.recovery.rebuild(rev + 1));
    const expected = await dump();
    const commands = whole.seen.commands;
    assert.equal(expected.get(REV_KEY), String(rev), "the revision line is the log's");
    assert.equal(expected.has(objectKey("configmaps", "default", "rb-own")), false, "its own object is gone");
    assert.equal(await redis.hget(objectKey("configmaps", "default", "rb-newer"), "r"), rvOf(await c.get("configmaps", "default", "rb-newer")));
    assert.ok(commands > 20, `${commands} commands`);

    // Killed at each of the first 12 commands (the mark, the wipe, the first changes put back), at 20 points after, and
    // at each of the last 6 (the fence lowered, the lock given back).
    const points = new Set([
      ...Array(12).keys(),
      ...Array.from({ length: 20 }, (_, i) => 12 + Math.floor(((commands - 13) * (i + 1)) / 20)),
      ...Array.from({ length: 6 }, (_, i) => commands - 6 + i),
    ]);
    let untouched = 0;
    for (const killAt of points) {
      await diverge();
      const d = dying(killAt);
      // Killed in its last steps (releasing the lock) the rebuild is done: its lock expires.
      const done = await d.recovery.rebuild(rev + 1).then(
        () => true,
        (err: unknown) => {
          assert.match(String(err), /killed/, `killed at command ${killAt} of ${commands}`);
          return false;
        },
      );
      assert.ok(d.seen.killed, `killed at command ${killAt} of ${commands}`);
      const r = restarted();
      if ((await redis.get(REV_KEY)) === String(rev + 1) && (await redis.exists(REBUILD_KEY)) === 0) {
        // Killed before the mark: nothing changed (the relay's record is still there, and the restarted relay finds
        // the divergence again and rebuilds).
        untouched++;
        assert.equal(await redis.exists(FENCE_KEY), 0);
        assert.ok(await r.rebuild(rev + 1));
      } else {
        // The api's start: fenced and behind the log, or marked, the repair finishes the rebuild.
        // No write lands meanwhile: the fence refuses it (503), or the wiped store lacks its namespace (404) — unless
        // the kill came once every change was back (the store whole, only the fence left), when a write is right.
        const whole = (await redis.exists(REBUILD_KEY)) === 0 && (await redis.get(REV_KEY)) === String(rev);
        if (!done && !whole) {
          const code = await codeOf(c.create(cm("rb-while-fenced", "1")));
          assert.ok(code === 503 || code === 404, `a write after a kill at command ${killAt}: ${code}`);
        }
        await r.repair();
      }
      assert.deepEqual([...(await dump())].sort(), [...expected].sort(), `the store after a kill at command ${killAt} of ${commands}`);
      assert.equal(await redis.exists(FENCE_KEY), 0, "the fence is gone");
      assert.equal(await redis.exists(REBUILD_KEY), 0, "the mark is gone");
    }
    assert.equal(untouched, 1, "only a kill at the first command (the mark with the fence) leaves the store as it was");
    // Served again, and the next write takes the revision after the log's.
    assert.equal(rvOf(await c.create(cm("rb-after", "1"))), String(rev + 1));
    await waitFor(async () => (await streamState(s.jsm)).lastRevision === rev + 1, { timeoutMs: 20_000, message: "published at its revision" });
  });

  it("a forgery in the log at a revision this store gave out is logged, never taken for another primary's change: nothing rebuilt", async () => {
    const c = s.client;
    const rev = await published();
    const before = { diverged: s.relay.diverged, rebuilds: s.recovery.stats.rebuilds };
    // Unsigned, then signed with another key: neither is the api's.
    const other = new EventSigner(generateKeyPairSync("ed25519").privateKey);
    for (const [i, signer] of [undefined, other].entries()) {
      const at = rev + 1 + i;
      assert.equal((await publishAt(`forged-${i}`, at, signer)).seq, at);
      const mine = await c.create(cm(`mine-${i}`, "1"));
      assert.equal(rvOf(mine), String(at), "the store gave out the forged message's revision");
      // The relay's publish is refused; it compares, finds no api signature, and drops its record as before.
      await waitFor(async () => (await s.redisClient.xlen(CHANGES_KEY)) === 0, { timeoutMs: 20_000, message: "the record dropped" });
    }
    assert.deepEqual({ diverged: s.relay.diverged, rebuilds: s.recovery.stats.rebuilds }, before, "no divergence, no rebuild");
    // The store keeps its own objects and takes no forged one.
    for (const i of [0, 1]) {
      assert.equal(await s.redisClient.exists(objectKey("configmaps", "default", `mine-${i}`)), 1);
      assert.equal(await s.redisClient.exists(objectKey("configmaps", "default", `forged-${i}`)), 0);
    }
    assert.equal(await s.redisClient.get(FENCE_KEY), null);
  });

  it("another primary's signed change at a revision this store gave out, while the log holds a forgery: the store is not wiped for a rebuild that would stop half way", async () => {
    const c = s.client;
    const rev = await published();
    const diverged = s.relay.diverged;
    const rebuilds = s.recovery.stats.rebuilds;
    assert.equal((await publishAt("signed-other", rev + 1, s.signer)).seq, rev + 1);
    assert.equal(rvOf(await c.create(cm("mine-again", "1"))), String(rev + 1));
    await waitFor(() => s.relay.diverged === diverged + 1, { timeoutMs: 20_000, message: "the divergence found" });
    await waitFor(async () => (await s.redisClient.xlen(CHANGES_KEY)) === 0, { timeoutMs: 20_000, message: "the record dropped" });
    assert.equal(s.recovery.stats.rebuilds, rebuilds, "not rebuilt: the log holds the last test's forgeries");
    assert.equal(await s.redisClient.exists(objectKey("configmaps", "default", "mine-again")), 1, "the store kept");
    assert.equal(await s.redisClient.get(FENCE_KEY), null, "not fenced");
    assert.equal(await codeOf(c.create(cm("still-served", "1"))), 0);
  });

  it("a store behind a log whose missing tail holds a forgery: the repair refuses it and the store stays fenced", async () => {
    const rev = await published();
    // The log one ahead of the store, with a message the api did not sign (a lost tail would be the api's own).
    assert.equal((await publishAt("forged-tail", rev + 1)).seq, rev + 1);
    const recovery = new StoreRecovery({ redis: s.redisClient, nc: s.nc, jsm: s.jsm, registry: s.registry.store, log: silentLogger(), verifier: s.verifier });
    const err = await recovery.repair().catch((e: unknown) => e);
    assert.ok(err instanceof UntrustedLogError, String(err));
    assert.match(err.message, new RegExp(`unsigned at sequence ${rev + 1}`));
    assert.equal(Number(await s.redisClient.get(REV_KEY)), rev, "nothing put back");
    assert.equal(await s.redisClient.exists(objectKey("configmaps", "default", "forged-tail")), 0);
    assert.equal(await s.redisClient.get(FENCE_KEY), String(rev + 1), "fenced");
    assert.equal(await codeOf(s.client.create(cm("while-fenced", "1"))), 503);
    await s.redisClient.del(FENCE_KEY);
  });
});
