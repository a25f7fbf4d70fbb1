import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod, ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import { conflict } from "@choreo/kit";
import { done, requeue } from "@choreo/kit/controller";
import { silentLogger } from "@choreo/kit/log";
import { FakeCache, RecordingClient, pod, rc } from "../testing.js";
import { FINALIZER_FOREGROUND, FINALIZER_ORPHAN, GarbageCollector } from "./garbage-collector.js";
import { podCacheTransform } from "../pod-cache.js";

function setup() {
  const rcs = new FakeCache<ReplicationController>();
  const pods = new FakeCache<Pod>(podCacheTransform());
  const client = new RecordingClient();
  const gc = new GarbageCollector({
    client,
    pods,
    log: silentLogger(),
    owners: [{ kind: "ReplicationController", resource: "replicationcontrollers", cache: rcs }],
  });
  return { rcs, pods, client, gc };
}
const owner = { name: "web", uid: "uid-web" };

describe("GarbageCollector", () => {
  it("background: a pod whose owner is gone (confirmed by a live read) is deleted", async () => {
    const { pods, client, gc } = setup();
    pods.put(pod("a", { owner }));
    await gc.reconcile("pod|default/a");
    assert.deepEqual(
      client.of("get").map((g) => g.name),
      ["web"],
      "checked with the api, not just the cache",
    );
    const del = client.of("delete");
    assert.deepEqual(
      del.map((d) => d.name),
      ["a"],
    );
    assert.equal(del[0]?.options?.preconditions?.uid, "uid-a");
    assert.equal(del[0]?.options?.preconditions?.resourceVersion, "7", "only the version read: one orphaned meanwhile is not deleted");
  });

  it("a pod whose owner exists (in the cache, or only in the api so far) is kept", async () => {
    const { pods, rcs, client, gc } = setup();
    rcs.put(rc("web", 1));
    pods.put(pod("a", { owner }));
    await gc.reconcile("pod|default/a");
    pods.put(pod("b", { owner: { name: "new", uid: "uid-new" } }));
    client.objects.set("replicationcontrollers/default/new", { kind: { $case: "replicationController", value: rc("new", 1) } });
    await gc.reconcile("pod|default/b");
    assert.equal(client.of("delete").length, 0);
  });

  it("an owner recreated under the same name (another uid) does not keep the old owner's pods", async () => {
    const { pods, rcs, client, gc } = setup();
    rcs.put(rc("web", 1, undefined, "uid-web-2"));
    client.objects.set("replicationcontrollers/default/web", { kind: { $case: "replicationController", value: rc("web", 1, undefined, "uid-web-2") } });
    pods.put(pod("a", { owner }));
    await gc.reconcile("pod|default/a");
    assert.deepEqual(
      client.of("delete").map((d) => d.name),
      ["a"],
    );
  });

  it("orphan: removes the owner's reference from its dependents, then the orphan finalizer", async () => {
    const { pods, rcs, client, gc } = setup();
    const r = rc("web", 2);
    r.metadata!.deletionTimestamp = "2025-01-01T00:00:00Z";
    r.metadata!.finalizers = [FINALIZER_ORPHAN];
    rcs.put(r);
    pods.put(pod("a", { owner }));
    pods.put(pod("b", { owner }));
    await gc.reconcile("owner|ReplicationController|default/web");
    const patches = client.of("patch");
    assert.deepEqual(
      patches.map((p) => `${p.resource}/${p.name}`),
      ["pods/a", "pods/b", "replicationcontrollers/web"],
    );
    assert.deepEqual((patches[0]?.patch as { metadata: { ownerReferences: unknown[] } }).metadata.ownerReferences, []);
    assert.deepEqual((patches[2]?.patch as { metadata: { finalizers: string[] } }).metadata.finalizers, []);
    assert.equal(client.of("delete").length, 0);
  });

  it("foreground: dependents are deleted first; the finalizer goes when none remain", async () => {
    const { pods, rcs, client, gc } = setup();
    const r = rc("web", 1);
    r.metadata!.deletionTimestamp = "2025-01-01T00:00:00Z";
    r.metadata!.finalizers = [FINALIZER_FOREGROUND];
    rcs.put(r);
    client.objects.set("replicationcontrollers/default/web", { kind: { $case: "replicationController", value: r } });
    pods.put(pod("a", { owner }));
    const res = await gc.reconcile("owner|ReplicationController|default/web");
    assert.ok(res.requeueAfterMs, "waits for the dependents");
    assert.equal(client.of("patch").length, 0);
    await gc.reconcile("pod|default/a");
    assert.deepEqual(
      client.of("delete").map((d) => d.name),
      ["a"],
    );
    pods.remove("default/a");
    await gc.reconcile("owner|ReplicationController|default/web");
    assert.deepEqual((client.of("patch")[0]?.patch as { metadata: { finalizers: string[] } }).metadata.finalizers, []);
  });

  it("looks at a dependent again when its ownerReferences change or on a resync, not at its other updates", async () => {
    const { pods, gc } = setup();
    const q = gc.controller.queue;
    const take = async (): Promise<string | undefined> => {
      const k = await q.get();
      if (k !== undefined) q.done(k);
      return k;
    };
    pods.put(pod("a", { owner }));
    assert.equal(await take(), "pod|default/a", "a new dependent is looked at");
    pods.put(pod("a", { owner, node: "n1", phase: "Running", ready: true }));
    assert.equal(q.len(), 0, "bound and running: the same owners, nothing for the collector");
    pods.put(pod("a", { owner: { name: "other", uid: "uid-other" }, node: "n1", phase: "Running", ready: true }));
    assert.equal(await take(), "pod|default/a", "another owner is looked at");
    const cached = pods.get("default/a")!;
    for (const h of pods.handlers) h.onUpdate?.(cached, cached);
    assert.equal(await take(), "pod|default/a", "a resync (the same object) is looked at");
    assert.equal(q.len(), 0);
  });

  it("a deletion refused on a changed version (409) is looked at again, since an update keeping the owners is not", async () => {
    const { pods, client, gc } = setup();
    pods.put(pod("a", { owner }));
    client.fail.delete = conflict("pods", "a", "the object has been modified");
    assert.deepEqual(await gc.reconcile("pod|default/a"), requeue());
    client.fail.delete = undefined;
    assert.deepEqual(await gc.reconcile("pod|default/a"), done());
    assert.equal(client.of("delete").length, 2);
  });

  it("leaves pods whose owner is a kind it does not collect for", async () => {
    const { pods, client, gc } = setup();
    pods.put(pod("a", { owner: { kind: "StatefulSet", name: "db", uid: "uid-db" } }));
    await gc.reconcile("pod|default/a");
    assert.equal(client.actions.length, 0);
  });
});

describe("GarbageCollector: ReplicaSets of Deployments", () => {
  type Meta = { metadata?: import("@choreo/kit/gen/choreo/meta/v1/meta").ObjectMeta };
  const rsOf = (name: string, deploymentUid: string): Meta => ({
    metadata: {
      ...pod(name).metadata!,
      ownerReferences: [{ apiVersion: "apps/v1", kind: "Deployment", name: "web", uid: deploymentUid, controller: true, blockOwnerDeletion: true }],
    },
  });
  function setupDeployments() {
    const deployments = new FakeCache<Meta>();
    const replicasets = new FakeCache<Meta>();
    const client = new RecordingClient();
    const gc = new GarbageCollector({
      client,
      pods: new FakeCache<Pod>(podCacheTransform()),
      dependents: [{ resource: "replicasets", cache: replicasets }],
      log: silentLogger(),
      owners: [{ kind: "Deployment", resource: "deployments", cache: deployments }],
    });
    return { deployments, replicasets, client, gc };
  }

  it("background: a ReplicaSet whose Deployment is gone is deleted; one whose Deployment exists is kept", async () => {
    const { replicasets, client, gc } = setupDeployments();
    replicasets.put(rsOf("web-abc", "uid-gone"));
    await gc.reconcile("replicasets|default/web-abc");
    assert.deepEqual(
      client.of("delete").map((d) => [d.resource, d.name]),
      [["replicasets", "web-abc"]],
    );
    replicasets.put(rsOf("web-def", "uid-live"));
    client.objects.set("deployments/default/web", {
      kind: {
        $case: "deployment",
        value: { apiVersion: "apps/v1", kind: "Deployment", metadata: { ...rsOf("web", "").metadata!, uid: "uid-live", ownerReferences: [] } },
      },
    });
    await gc.reconcile("replicasets|default/web-def");
    assert.equal(client.of("delete").length, 1);
  });

  it("orphan: the Deployment's ownerReference is removed from its ReplicaSets, then the finalizer", async () => {
    const { deployments, replicasets, client, gc } = setupDeployments();
    deployments.put({ metadata: { ...pod("web").metadata!, uid: "uid-d", deletionTimestamp: "2025-01-01T00:00:00Z", finalizers: [FINALIZER_ORPHAN] } });
    replicasets.put(rsOf("web-abc", "uid-d"));
    await gc.reconcile("owner|Deployment|default/web");
    const patches = client.of("patch");
    assert.deepEqual(
      patches.map((p) => [p.resource, p.name]),
      [
        ["replicasets", "web-abc"],
        ["deployments", "web"],
      ],
    );
    assert.deepEqual((patches[0]?.patch as { metadata: { ownerReferences: unknown[] } }).metadata.ownerReferences, []);
  });
});
