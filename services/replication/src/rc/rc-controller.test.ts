import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { conflict, keyOf, unwrap } from "@choreo/kit";
import { selectorFromSet } from "@choreo/kit/apimachinery";
import type { Pod, ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { Expectations, slowStartBatch } from "../expectations.js";
import { PodControl } from "../pod-control.js";
import { isActive } from "../pod-template.js";
import { FakeCache, IndexedFakeCache, RecordingClient, pod, rc } from "../testing.js";
import { claimPods } from "./claim.js";
import { podsToDelete } from "./ranking.js";
import { RC_KIND, ReplicationManager } from "./rc-controller.js";
import { computeStatus, nextAvailableInMs } from "./status.js";
import { SetTally, tallyView } from "./tally.js";
import { podCacheTransform } from "../pod-cache.js";

function setup(r: ReplicationController, ps: Pod[] = []) {
  const rcs = new FakeCache<ReplicationController>();
  const pods = new FakeCache<Pod>(podCacheTransform());
  const client = new RecordingClient();
  const events: string[] = [];
  const m = new ReplicationManager({ client, rcs, pods, log: silentLogger(), recorder: { emit: (_r, _t, reason, msg) => events.push(`${reason} ${msg}`) } });
  rcs.put(r);
  for (const p of ps) pods.put(p);
  client.objects.set(`replicationcontrollers/default/${r.metadata!.name}`, { kind: { $case: "replicationController", value: r } });
  return { rcs, pods, client, m, events, key: keyOf(r.metadata!) };
}

const owner = { name: "web", uid: "uid-web" };

describe("claimPods", () => {
  const sel = selectorFromSet({ app: "web" });
  it("keeps its matching pods, adopts matching orphans, releases its pods that stopped matching, ignores others' pods", () => {
    const mine = pod("a", { owner });
    const orphan = pod("b");
    const quarantined = pod("c", { owner, labels: { app: "debug" } });
    const theirs = pod("d", { owner: { name: "other", uid: "uid-other" } });
    const unrelated = pod("e", { labels: { app: "db" } });
    const c = claimPods([mine, orphan, quarantined, theirs, unrelated], "uid-web", sel, false);
    assert.deepEqual(
      c.owned.map((p) => p.metadata?.name),
      ["a"],
    );
    assert.deepEqual(
      c.adopt.map((p) => p.metadata?.name),
      ["b"],
    );
    assert.deepEqual(
      c.release.map((p) => p.metadata?.name),
      ["c"],
    );
  });
  it("adopts nothing while the controller is being deleted, nor pods being deleted", () => {
    assert.equal(claimPods([pod("b")], "uid-web", sel, true).adopt.length, 0);
    assert.equal(claimPods([pod("b", { deleting: true })], "uid-web", sel, false).adopt.length, 0);
  });
});

describe("podsToDelete", () => {
  it("takes unscheduled, then pending, then not-ready, then the most recently ready, then the most restarted, then the newest", () => {
    const ps = [
      pod("old-ready", { node: "n1", readySince: "2025-01-01T00:00:00Z" }),
      pod("new-ready", { node: "n1", readySince: "2025-01-02T00:00:00Z" }),
      pod("not-ready", { node: "n1", ready: false }),
      pod("pending", { node: "n1", phase: "Pending", ready: false }),
      pod("unscheduled", { phase: "Pending", ready: false }),
      pod("restarts", { node: "n1", readySince: "2025-01-01T00:00:00Z", restarts: 3 }),
    ];
    assert.deepEqual(
      podsToDelete(ps, 6).map((p) => p.metadata?.name),
      ["unscheduled", "pending", "not-ready", "new-ready", "restarts", "old-ready"],
    );
    assert.equal(podsToDelete(ps, 2).length, 2);
  });
});

describe("expectations and slow start", () => {
  it("are unsatisfied until every creation and deletion is observed, and expire", () => {
    let now = 0;
    const e = new Expectations(1_000, () => now);
    e.expectCreations("k", 2);
    e.expectDeletions("k", ["u1"]);
    assert.equal(e.satisfied("k"), false);
    e.creationObserved("k");
    e.creationObserved("k");
    assert.equal(e.satisfied("k"), false);
    e.deletionObserved("k", "u1");
    assert.equal(e.satisfied("k"), true);
    e.expectCreations("k", 1);
    now = 2_000;
    assert.equal(e.satisfied("k"), true, "expired");
  });
  it("slowStartBatch runs 1, 2, 4… and stops after the first failing batch", async () => {
    const calls: number[] = [];
    const r = await slowStartBatch(10, 500, async (i) => {
      calls.push(i);
      if (i === 4) throw new Error("quota");
      return Promise.resolve();
    });
    assert.equal(calls.length, 7, "batches 1+2+4, then stop");
    assert.equal(r.ok, 6);
    assert.match(String(r.error), /quota/);
  });
});

/** Batch sizes of slow start: calls started while none is in flight open a new batch. */
function batchRecorder(fail: (i: number) => boolean = () => false) {
  const batches: number[] = [];
  let inflight = 0;
  const fn = async (i: number): Promise<void> => {
    if (inflight === 0) batches.push(0);
    batches[batches.length - 1]!++;
    inflight++;
    await new Promise((r) => setImmediate(r));
    inflight--;
    if (fail(i)) throw new Error(`quota (${i})`);
  };
  return { batches, fn };
}

describe("slow start", () => {
  it("doubles from 1 to the burst: nine rounds for 500", async () => {
    const a = batchRecorder();
    const r = await slowStartBatch(500, 500, a.fn);
    assert.deepEqual(a.batches, [1, 2, 4, 8, 16, 32, 64, 128, 245]);
    assert.deepEqual([r.ok, r.attempted], [500, 500]);
  });
  it("a failing batch is the last: what succeeded, what was tried, the first error", async () => {
    const a = batchRecorder((i) => i >= 100);
    const r = await slowStartBatch(500, 500, a.fn);
    assert.deepEqual(a.batches, [1, 2, 4, 8, 16, 32, 64]);
    assert.deepEqual([r.ok, r.attempted], [100, 127]);
    assert.match(String(r.error), /quota \(100\)/);
  });
  it("PodControl expects only the creations that succeeded: failed and skipped ones are observed at once", async () => {
    const e = new Expectations();
    const client = new RecordingClient();
    let n = 0;
    client.create = async (o) => {
      const i = n++;
      if (i === 4 || i === 5) throw new Error("quota");
      return RecordingClient.prototype.create.call(client, o);
    };
    const pc = new PodControl({ client, expectations: e });
    const owner = { kind: "ReplicationController", apiVersion: "v1", metadata: rc("web", 10).metadata };
    const r = await pc.create("default/web", owner, 10, () => pod("x"));
    assert.equal(r.ok, 5, "batches 1, 2, then 4 of which two failed");
    assert.deepEqual(e.pendingOf("default/web"), { adds: 5, dels: 0 }, "waits for the 5 created pods only");
  });
});

describe("SetTally", () => {
  it("counts what computeStatus counts over the claimed pods, and releases what claimPods releases, through 5,000 random pod events", () => {
    let seed = 42;
    const rnd = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const start = Date.parse("2025-01-01T00:01:00Z");
    for (const minReadySeconds of [0, 30]) {
      const r = rc("web", 3);
      r.spec!.minReadySeconds = minReadySeconds;
      r.spec!.template!.metadata!.labels = { app: "web", tier: "fe" };
      const selector = RC_KIND.selector(r)!;
      const tally = new SetTally("uid-web", "default", tallyView(r, selector));
      const cache = new Map<string, Pod>();
      for (let step = 0; step < 5_000; step++) {
        const name = `p${rnd(40)}`;
        const key = `default/${name}`;
        if (rnd(6) === 0) {
          cache.delete(key);
          tally.remove(key);
        } else {
          const p = pod(name, {
            owner: [owner, { name: "other", uid: "uid-other" }, undefined][rnd(3)],
            labels: [{ app: "web" }, { app: "web", tier: "fe" }, { app: "debug" }][rnd(3)],
            phase: ["Running", "Pending", "Succeeded", "Failed"][rnd(4)],
            ready: rnd(2) === 0,
            readySince: ["2025-01-01T00:00:00Z", "2025-01-01T00:00:45Z", "2025-01-01T00:02:00Z", "not a time"][rnd(4)],
            deleting: rnd(5) === 0,
          });
          cache.set(key, p);
          // The manager's handler: the pod is the set's while the set controls it.
          if (p.metadata?.ownerReferences[0]?.uid === "uid-web") tally.put(key, p);
          else tally.remove(key);
        }
        const nowMs = start + step * 20; // through the times pods become available
        const claim = claimPods([...cache.values()], "uid-web", selector, false);
        const active = claim.owned.filter(isActive);
        const want = computeStatus(r, active, nowMs);
        assert.deepEqual(
          tally.counts(nowMs),
          {
            replicas: want.replicas,
            fullyLabeledReplicas: want.fullyLabeledReplicas,
            readyReplicas: want.readyReplicas,
            availableReplicas: want.availableReplicas,
          },
          `step ${step}`,
        );
        assert.deepEqual(tally.releaseKeys().sort(), claim.release.map((p) => keyOf(p.metadata!)).sort(), `step ${step}`);
        assert.equal(tally.nextAvailableInMs(nowMs), nextAvailableInMs(r, active, nowMs), `step ${step}`);
      }
    }
  });
});

describe("ReplicationManager.reconcile", () => {
  it("creates the missing pods with a controller ownerReference, and not again before it has seen them", async () => {
    const { m, client, key, events } = setup(rc("web", 3));
    await m.reconcile(key);
    const creates = client.of("create");
    assert.equal(creates.length, 3);
    const p = unwrap(creates[0]!.object) as Pod;
    assert.equal(p.metadata?.generateName, "web-");
    assert.deepEqual(p.metadata?.ownerReferences, [
      { apiVersion: "v1", kind: "ReplicationController", name: "web", uid: "uid-web", controller: true, blockOwnerDeletion: true },
    ]);
    assert.equal(events.filter((e) => e.startsWith("SuccessfulCreate")).length, 3);
    await m.reconcile(key);
    assert.equal(client.of("create").length, 3, "the cache has not shown the pods yet: no second round");
  });

  it("creates again once its creations are observed and a pod disappears", async () => {
    const { m, client, key, pods } = setup(rc("web", 2));
    await m.reconcile(key);
    pods.put(pod("web-1", { owner }));
    pods.put(pod("web-2", { owner }));
    await m.reconcile(key);
    assert.equal(client.of("create").length, 2);
    pods.remove("default/web-1");
    await m.reconcile(key);
    assert.equal(client.of("create").length, 3, "a replacement");
  });

  it("scales down by deleting the least valuable pods, with a uid precondition", async () => {
    const { m, client, key } = setup(rc("web", 1), [pod("a", { owner, node: "n1" }), pod("b", { owner, node: "n1", ready: false }), pod("c", { owner })]);
    await m.reconcile(key);
    const dels = client.of("delete");
    assert.deepEqual(dels.map((d) => d.name).sort(), ["b", "c"]);
    assert.equal(dels[0]?.options?.preconditions?.uid, `uid-${dels[0]?.name ?? ""}`);
  });

  it("quarantine: releases its pod whose labels stopped matching and creates a replacement", async () => {
    const { m, client, key } = setup(rc("web", 2), [pod("a", { owner }), pod("q", { owner, labels: { app: "debug" } })]);
    await m.reconcile(key);
    const patches = client.of("patch");
    assert.equal(patches.length, 1);
    assert.equal(patches[0]?.name, "q");
    assert.deepEqual((patches[0]?.patch as { metadata: { ownerReferences: unknown[] } }).metadata.ownerReferences, []);
    assert.equal(client.of("create").length, 1);
  });

  it("adopts a matching orphan after re-reading the RC, and counts it", async () => {
    const { m, client, key } = setup(rc("web", 1), [pod("orphan")]);
    await m.reconcile(key);
    assert.equal(client.of("get").length, 1);
    const patch = client.of("patch")[0]?.patch as { metadata: { ownerReferences: { uid: string; controller: boolean }[] } };
    assert.deepEqual(
      patch.metadata.ownerReferences.map((r) => [r.uid, r.controller]),
      [["uid-web", true]],
    );
    assert.equal(client.of("create").length, 0);
  });

  it("does not adopt for an RC the api no longer has", async () => {
    const { m, client, key } = setup(rc("web", 1), [pod("orphan")]);
    client.objects.clear();
    await m.reconcile(key);
    assert.equal(client.of("patch").length, 0);
    assert.equal(client.of("create").length, 1);
  });

  it("writes status replicas, ready and available replicas and observedGeneration, only when they change", async () => {
    const r = rc("web", 2);
    const { m, client, key, rcs } = setup(r, [pod("a", { owner }), pod("b", { owner, ready: false })]);
    await m.reconcile(key);
    const st = client.of("updateStatus");
    assert.equal(st.length, 1);
    const status = (unwrap(st[0]!.object) as ReplicationController).status;
    assert.deepEqual([status?.replicas, status?.readyReplicas, status?.availableReplicas, status?.observedGeneration], [2, 1, 1, 1]);
    rcs.put({ ...r, status });
    await m.reconcile(key);
    assert.equal(client.of("updateStatus").length, 1, "nothing changed: no write");
  });

  it("a create failure is reported as ReplicaFailure and FailedCreate, and the key is retried", async () => {
    const { m, client, key, events } = setup(rc("web", 4));
    client.fail.create = conflict("pods", "x", "quota");
    await assert.rejects(m.reconcile(key));
    assert.equal(client.of("create").length, 1, "slow start: one call, not four");
    assert.ok(events.some((e) => e.startsWith("FailedCreate")));
    const status = (unwrap(client.of("updateStatus")[0]!.object) as ReplicationController).status;
    assert.equal(status?.conditions[0]?.type, "ReplicaFailure");
    assert.equal(m.expectations.satisfied(key), true, "nothing left to wait for");
  });

  it("never creates while the RC is being deleted", async () => {
    const r = rc("web", 3);
    r.metadata!.deletionTimestamp = "2025-01-01T00:00:00Z";
    const { m, client, key } = setup(r);
    await m.reconcile(key);
    assert.equal(client.of("create").length, 0);
  });

  it("every sync starts slow start over at 1, as Kubernetes; once the api refuses, each sync makes one failing call", async () => {
    const { m, client, key, pods } = setup(rc("web", 1200));
    let inflight = 0;
    const rounds: number[] = [];
    let refuse = false;
    client.create = async (o) => {
      if (inflight === 0) rounds.push(0);
      rounds[rounds.length - 1]!++;
      inflight++;
      await new Promise((r) => setImmediate(r));
      inflight--;
      if (refuse) throw conflict("pods", "x", "exceeded quota");
      return RecordingClient.prototype.create.call(client, o);
    };
    const seeCreated = (): void => {
      let i = pods.list().length;
      while (m.expectations.pendingOf(key).adds > 0) pods.put(pod(`web-${i++}`, { owner }));
    };
    await m.reconcile(key);
    assert.deepEqual(rounds.splice(0), [1, 2, 4, 8, 16, 32, 64, 128, 245], "the first 500");
    seeCreated();
    await m.reconcile(key);
    assert.deepEqual(rounds.splice(0), [1, 2, 4, 8, 16, 32, 64, 128, 245], "the next 500: from 1 again");
    seeCreated();
    refuse = true;
    await assert.rejects(m.reconcile(key), /exceeded quota/);
    assert.deepEqual(rounds.splice(0), [1], "quota: one failing call");
    await assert.rejects(m.reconcile(key), /exceeded quota/);
    assert.deepEqual(rounds.splice(0), [1], "and one again on the next sync");
  });

  it("a sync looks at none of 20,000 pods other controllers own in its namespace, nor at its own pods once counted", async () => {
    const pods = new IndexedFakeCache<Pod>(podCacheTransform());
    const rcs = new FakeCache<ReplicationController>();
    const client = new RecordingClient();
    const m = new ReplicationManager({ client, rcs, pods, log: silentLogger() });
    const reads = { foreign: 0, own: 0 };
    const counted = (p: Pod, which: keyof typeof reads): Pod =>
      new Proxy(p, {
        get: (t, prop, r) => {
          reads[which]++;
          return Reflect.get(t, prop, r) as unknown;
        },
      });
    const base = pod("x");
    for (let i = 0; i < 20_000; i++) {
      // Same labels as web's pods (its selector matches them), controlled by 20 other RCs.
      const p = structuredClone(base);
      p.metadata!.name = `other-${i}`;
      p.metadata!.uid = `uid-other-${i}`;
      p.metadata!.ownerReferences = [
        { apiVersion: "v1", kind: "ReplicationController", name: `other-${i % 20}`, uid: `uid-other-${i % 20}`, controller: true, blockOwnerDeletion: true },
      ];
      pods.put(counted(p, "foreign"));
    }
    for (let i = 0; i < 1_000; i++) pods.put(counted(pod(`web-${i}`, { owner, ready: i % 2 === 0 }), "own"));
    pods.put(pod("orphan"));
    const r = rc("web", 1_001);
    rcs.put(r);
    client.objects.set("replicationcontrollers/default/web", { kind: { $case: "replicationController", value: r } });
    const key = keyOf(r.metadata!);

    reads.foreign = 0;
    await m.reconcile(key);
    assert.equal(reads.foreign, 0, "no pod of another controller was read");
    assert.equal(client.of("patch").length, 1, "the orphan adopted");
    assert.equal(client.of("create").length, 0, "1,000 own + the adopted orphan = replicas");
    const status = (unwrap(client.of("updateStatus")[0]!.object) as ReplicationController).status;
    assert.deepEqual([status?.replicas, status?.readyReplicas, status?.availableReplicas], [1_001, 501, 501]);

    // The adoption comes back through the informer; a pod turns ready. A sync then reads none of the set's pods.
    const adopted = pod("orphan", { owner });
    adopted.metadata!.resourceVersion = "8";
    pods.put(adopted);
    pods.put(counted(pod("web-1", { owner }), "own"));
    rcs.put({ ...r, status });
    reads.foreign = 0;
    reads.own = 0;
    await m.reconcile(key);
    assert.deepEqual(reads, { foreign: 0, own: 0 });
    const st2 = (unwrap(client.of("updateStatus")[1]!.object) as ReplicationController).status;
    assert.deepEqual([st2?.replicas, st2?.readyReplicas], [1_001, 502]);
  });

  it("computeStatus counts fully labeled replicas by the template's labels", () => {
    const r = rc("web", 2);
    r.spec!.template!.metadata!.labels = { app: "web", tier: "fe" };
    const s = computeStatus(r, [pod("a", { labels: { app: "web", tier: "fe" } }), pod("b")], Date.now());
    assert.equal(s.fullyLabeledReplicas, 1);
  });
});
