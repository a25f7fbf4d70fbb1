import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { Object as ObjectMsg, WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";
import type { WriteOp } from "../../storage/object-storage.js";
import { rejects } from "../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";
import { testPod } from "../../testing/objects.js";

const pod = testPod;

describe("the generic store: finalizers, paging", () => {
  // On the in-memory storage: the shared verbs, no server needed.
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  it("keeps an object with finalizers until the last one is removed", async () => {
    const p = unwrap(await s.client.create(pod("p-fin", { metadata: { name: "p-fin", namespace: "default", finalizers: ["example.com/hold"] } }))) as Pod;
    assert.deepEqual(p.metadata?.finalizers, ["example.com/hold"]);
    const deleting = unwrap(await s.client.delete("pods", "default", "p-fin")) as Pod;
    assert.ok(deleting.metadata?.deletionTimestamp);
    deleting.metadata!.finalizers = [];
    await s.client.update({ kind: { $case: "pod", value: deleting } });
    await rejects(s.client.get("pods", "default", "p-fin"), 404, "NotFound");
  });
  it("retries a delete that lost a race to a status write, and still refuses a stale resourceVersion precondition", async () => {
    const created = unwrap(
      await s.client.create(pod("p-race", { metadata: { name: "p-race", namespace: "default", finalizers: ["example.com/hold"] } })),
    ) as Pod;
    // The first write for p-race is preceded by another writer's status update, as the replication actor's would be.
    const write = s.storage.write.bind(s.storage);
    let raced = 0;
    s.storage.write = async (op) => {
      if (op.name === "p-race" && raced++ === 0) {
        const cur = unwrap(await s.client.get("pods", "default", "p-race")) as Pod;
        cur.status = { ...cur.status!, message: "raced" };
        await s.client.updateStatus({ kind: { $case: "pod", value: cur } });
      }
      return write(op);
    };
    try {
      const deleting = unwrap(await s.client.delete("pods", "default", "p-race", { propagationPolicy: "Orphan", gracePeriodSeconds: 0 })) as Pod;
      assert.ok(raced >= 3, `the status write, the lost write and the retried write went through storage (${raced})`);
      assert.ok(deleting.metadata?.deletionTimestamp, "marked for deletion on the second attempt");
      assert.equal(deleting.status?.message, "raced", "the retry started from the raced state");
    } finally {
      s.storage.write = write;
    }
    await rejects(
      s.client.delete("pods", "default", "p-race", { preconditions: { resourceVersion: created.metadata!.resourceVersion, uid: "" } }),
      409,
      "Conflict",
      /Precondition failed: ResourceVersion/,
    );
  });
  it("a write's change record is the event with the object's stored bytes (encoded once) as its object", async () => {
    const ops: WriteOp[] = [];
    const write = s.storage.write.bind(s.storage);
    s.storage.write = (op) => (ops.push(op), write(op));
    try {
      const created = unwrap(await s.client.create(pod("p-ev", { metadata: { name: "p-ev", namespace: "default", labels: { a: "1" } } }))) as Pod;
      created.metadata!.labels = { a: "2" };
      await s.client.update({ kind: { $case: "pod", value: created } });
      await s.client.delete("pods", "default", "p-ev", { gracePeriodSeconds: 0 });
    } finally {
      s.storage.write = write;
    }
    const [create, update] = ops;
    assert.ok(create && update && ops.length >= 3, `create, update and delete went through storage (${ops.length})`);
    for (const [op, type, prev] of [
      [create, "ADDED", {}],
      [update, "MODIFIED", { a: "1" }],
    ] as const) {
      const ev = WatchEvent.decode(op.event);
      assert.equal(ev.type, type);
      assert.deepEqual(ev.object, ObjectMsg.decode(op.object!), `${type}: the stored object`);
      assert.deepEqual(ev.prevLabels, prev);
      assert.equal(ev.hasPrev, type === "MODIFIED");
      assert.deepEqual(WatchEvent.decode(WatchEvent.encode(ev).finish()), ev, `${type}: reads back as a canonical encoding would`);
    }
    const deleted = WatchEvent.decode(ops.at(-1)!.event);
    assert.equal(deleted.type, "DELETED");
    assert.equal(deleted.object?.kind?.value.metadata?.name, "p-ev");
  });
  it("a bind's and a status update's change records carry the version read before (fields, labels, node index)", async () => {
    const ops: WriteOp[] = [];
    const write = s.storage.write.bind(s.storage);
    s.storage.write = (op) => (ops.push(op), write(op));
    try {
      await s.client.create(pod("p-bind", { metadata: { name: "p-bind", namespace: "default", labels: { app: "x" } } }));
      const bound = unwrap(await s.client.bind("default", "p-bind", "node-a")) as Pod;
      assert.equal(bound.spec?.nodeName, "node-a");
      assert.ok(bound.status?.conditions.some((c) => c.type === "PodScheduled" && c.status === "True"));
      bound.status = { ...bound.status!, phase: "Running" };
      const running = unwrap(await s.client.updateStatus({ kind: { $case: "pod", value: bound } })) as Pod;
      assert.equal(running.status?.phase, "Running");
      assert.equal(running.spec?.nodeName, "node-a");
    } finally {
      s.storage.write = write;
    }
    const [, bindOp, statusOp] = ops;
    assert.ok(bindOp && statusOp, `create, bind and status update went through storage (${ops.length})`);
    const bindEv = WatchEvent.decode(bindOp.event);
    assert.equal(bindEv.prevFields["spec.nodeName"], "", "the bind's record: unbound before");
    assert.equal(bindEv.prevFields["status.phase"], "Pending");
    assert.deepEqual(bindEv.prevLabels, { app: "x" });
    assert.deepEqual(bindOp.indexAdd, [{ index: "node", value: "node-a" }]);
    assert.deepEqual(bindOp.indexRemove, []);
    const statusEv = WatchEvent.decode(statusOp.event);
    assert.equal(statusEv.prevFields["status.phase"], "Pending", "the status update's record: the phase before");
    assert.equal(statusEv.prevFields["spec.nodeName"], "node-a");
    assert.deepEqual(statusOp.indexAdd, []);
    assert.deepEqual(statusOp.indexRemove, []);
    const stored = unwrap(await s.client.get("pods", "default", "p-bind")) as Pod;
    assert.equal(stored.status?.phase, "Running");
    assert.equal(stored.spec?.nodeName, "node-a");
  });
  it("a create in a namespace being deleted is refused, also after creates there were allowed", async () => {
    await s.client.create(fromKubeJson({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ending", finalizers: ["example.com/hold"] } }));
    await s.client.create(pod("p-1", { metadata: { name: "p-1", namespace: "ending" } }));
    await s.client.create(pod("p-2", { metadata: { name: "p-2", namespace: "ending" } }));
    await s.client.delete("namespaces", "", "ending");
    await rejects(
      s.client.create(pod("p-3", { metadata: { name: "p-3", namespace: "ending" } })),
      403,
      "Forbidden",
      /unable to create new content in namespace ending because it is being terminated/,
    );
    await rejects(s.client.create(pod("p-4", { metadata: { name: "p-4", namespace: "absent" } })), 404, "NotFound");
  });
  it("pages lists with limit and continue", async () => {
    const ns = fromKubeJson({ apiVersion: "v1", kind: "Namespace", metadata: { name: "paging" } });
    await s.client.create(ns);
    for (let i = 0; i < 7; i++) await s.client.create(pod(`p${i}`, {}, "paging"));
    const seen: string[] = [];
    let cont = "";
    let pages = 0;
    do {
      const page = await s.client.list("pods", { namespace: "paging", limit: 3, continue: cont });
      seen.push(...page.items.map((o) => unwrap(o).metadata?.name ?? ""));
      cont = page.metadata?.continue ?? "";
      pages++;
    } while (cont);
    assert.deepEqual(seen, ["p0", "p1", "p2", "p3", "p4", "p5", "p6"]);
    assert.equal(pages, 3);
    await rejects(s.client.list("pods", { namespace: "paging", continue: "garbage!" }), 400, "BadRequest", /continue key is not valid/);
  });
});
