// test-tier: servers
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ApiError, BindingRefusal, bindingRefusalOf, unwrap } from "@choreo/kit";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import type { Pod, ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import { startStack, type Stack } from "../testing/stack.js";
import { testPod } from "../testing/objects.js";

const pod = testPod;

async function rejects(p: Promise<unknown>, code: number, reason: string, message?: RegExp): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ApiError, `not an ApiError: ${String(err)}`);
    assert.equal(err.code, code, err.message);
    assert.equal(err.reason, reason, err.message);
    if (message) assert.match(err.message, message);
    return err;
  }
  assert.fail("expected a rejection");
}

describe("registry over NATS", () => {
  let s: Stack;
  before(async () => {
    s = await startStack();
  });
  after(async () => {
    await s?.stop();
  });

  it("creates the system namespaces at start", async () => {
    const list = await s.client.list("namespaces");
    const names = list.items.map((o) => unwrap(o).metadata?.name).sort();
    assert.deepEqual(names, ["default", "kube-node-lease", "kube-public", "kube-system"]);
  });

  it("creates with uid, timestamps, generation 1, the revision as resourceVersion, and Pending status", async () => {
    const before = await s.store.currentRevision();
    const created = unwrap(await s.client.create(pod("p1"))) as Pod;
    assert.equal(created.metadata?.generation, 1);
    assert.match(created.metadata?.uid ?? "", /^[0-9a-f-]{36}$/);
    assert.match(created.metadata?.creationTimestamp ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(created.metadata?.resourceVersion, String(before + 1));
    assert.equal(created.status?.phase, "Pending");
    assert.equal(created.spec?.restartPolicy, "Always");
    assert.equal(created.spec?.containers[0]?.imagePullPolicy, "IfNotPresent");
    const got = unwrap(await s.client.get("pods", "default", "p1"));
    assert.deepEqual(toKubeJson({ kind: { $case: "pod", value: got as Pod } }), toKubeJson({ kind: { $case: "pod", value: created } }));
    await rejects(s.client.create(pod("p1")), 409, "AlreadyExists", /pods "p1" already exists/);
  });

  it("refuses stale resourceVersions with 409 and bumps generation on spec changes only", async () => {
    const rc = unwrap(
      await s.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "ReplicationController",
          metadata: { name: "rc1", namespace: "default" },
          spec: { replicas: 1, selector: { app: "x" }, template: { metadata: { labels: { app: "x" } }, spec: { containers: [{ name: "c", image: "i" }] } } },
        }),
      ),
    ) as ReplicationController;
    const stale = structuredClone(rc);
    rc.spec!.replicas = 2;
    const updated = unwrap(await s.client.update({ kind: { $case: "replicationController", value: rc } })) as ReplicationController;
    assert.equal(updated.metadata?.generation, 2);
    stale.metadata!.labels = { changed: "yes" };
    const revBefore = await s.store.currentRevision();
    await rejects(s.client.update({ kind: { $case: "replicationController", value: stale } }), 409, "Conflict", /the object has been modified/);
    assert.equal(await s.store.currentRevision(), revBefore, "a refused write does not move the revision");
    updated.metadata!.labels = { l: "1" };
    const relabelled = unwrap(await s.client.update({ kind: { $case: "replicationController", value: updated } })) as ReplicationController;
    assert.equal(relabelled.metadata?.generation, 2, "metadata changes keep the generation");
  });

  it("writes status only through the status subresource", async () => {
    const p = unwrap(await s.client.create(pod("p-status"))) as Pod;
    p.status!.phase = "Running";
    const revBefore = await s.store.currentRevision();
    await rejects(s.client.update({ kind: { $case: "pod", value: p } }), 422, "Invalid", /status may only be changed through the status subresource/);
    assert.equal(await s.store.currentRevision(), revBefore);
    const r = unwrap(await s.client.updateStatus({ kind: { $case: "pod", value: p } })) as Pod;
    assert.equal(r.status?.phase, "Running");
    assert.equal(r.metadata?.generation, 1);
  });

  it("binds an unbound pod once; a second bind is a conflict", async () => {
    await s.client.create(pod("p-bind"));
    const bound = unwrap(await s.client.bind("default", "p-bind", "node-a")) as Pod;
    assert.equal(bound.spec?.nodeName, "node-a");
    assert.ok(bound.status?.conditions.some((c) => c.type === "PodScheduled" && c.status === "True"));
    await rejects(s.client.bind("default", "p-bind", "node-b"), 409, "Conflict", /already assigned to node "node-a"/);
    const onNode = await s.client.list("pods", { fieldSelector: "spec.nodeName=node-a" });
    assert.deepEqual(
      onNode.items.map((o) => unwrap(o).metadata?.name),
      ["p-bind"],
    );
  });

  it("never binds past a node's capacity, even with concurrent binds", async () => {
    const node = unwrap(await s.client.create(fromKubeJson({ apiVersion: "v1", kind: "Node", metadata: { name: "small" } })));
    const withStatus = fromKubeJson({
      ...toKubeJson({ kind: { $case: "node", value: node as never } }),
      status: { allocatable: { cpu: "1", memory: "1Gi", pods: "110" }, capacity: { cpu: "1", memory: "1Gi", pods: "110" } },
    });
    await s.client.updateStatus(withStatus);
    const sized = (name: string) => pod(name, { spec: { containers: [{ name: "c", image: "i", resources: { requests: { cpu: "200m" } } }] } });
    await Promise.all(Array.from({ length: 10 }, (_, i) => s.client.create(sized(`fit${i}`))));
    const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => s.client.bind("default", `fit${i}`, "small")));
    const won = results.filter((r) => r.status === "fulfilled").length;
    assert.equal(won, 5, "1 cpu holds exactly five 200m pods");
    for (const r of results) {
      if (r.status === "rejected")
        assert.ok(r.reason instanceof ApiError && r.reason.code === 409 && /Insufficient cpu/.test(r.reason.message), String(r.reason));
      // The typed cause crosses the bus: schedulers read it, not the message.
      if (r.status === "rejected")
        assert.ok([BindingRefusal.nodeCannotTakePod, BindingRefusal.nodeBusy].includes(bindingRefusalOf(r.reason)!), String(r.reason));
    }
  });

  it("deletes a namespace with everything in it", async () => {
    await s.client.create(fromKubeJson({ apiVersion: "v1", kind: "Namespace", metadata: { name: "doomed" } }));
    await s.client.create(pod("a", {}, "doomed"));
    await s.client.create(pod("b", {}, "doomed"));
    const ns = unwrap(await s.client.delete("namespaces", "", "doomed"));
    assert.ok(ns.metadata?.deletionTimestamp);
    // Terminating (403) or already purged (404): either way nothing new goes in.
    const err = await s.client.create(pod("c", {}, "doomed")).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof ApiError && (err.code === 403 || err.code === 404), `unexpected ${String(err)}`);
    for (let i = 0; i < 100; i++) {
      const gone = await s.client.get("namespaces", "", "doomed").then(
        () => false,
        () => true,
      );
      if (gone) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await rejects(s.client.get("namespaces", "", "doomed"), 404, "NotFound");
    assert.equal((await s.client.list("pods", { namespace: "doomed" })).items.length, 0);
    await rejects(s.client.delete("namespaces", "", "default"), 403, "Forbidden", /may not be deleted/);
  });
});
