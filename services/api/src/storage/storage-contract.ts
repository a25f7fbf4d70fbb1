// The semantics every ObjectStorage keeps, as one suite run against each
// implementation (Redis in storage.test.ts, memory in memory-store.test.ts).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { eventSubject } from "@choreo/kit/bus";
import { Object as ObjectMsg, WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { StoreError, type ObjectStorage, type WriteOp } from "./object-storage.js";

/** A fresh, empty storage and how many change records wait in it. */
export interface StorageUnderTest {
  storage: ObjectStorage;
  changeRecords(): Promise<number>;
  stop(): Promise<void>;
}

const event = (name: string) =>
  fromKubeJson({ apiVersion: "v1", kind: "Event", metadata: { name, namespace: "default" }, involvedObject: { kind: "Pod", name: "p" } });

function op(mode: WriteOp["mode"], name: string, expectedRevision?: number): WriteOp {
  const object = ObjectMsg.encode(event(name)).finish();
  const ev = WatchEvent.encode({
    type: mode === "create" ? "ADDED" : mode === "update" ? "MODIFIED" : "DELETED",
    object: event(name),
    status: undefined,
    revision: 0,
    prevLabels: {},
    prevFields: {},
    hasPrev: false,
  }).finish();
  return { mode, resource: "events", namespace: "default", name, expectedRevision, object, event: ev, subject: eventSubject("events", "default", name) };
}

const names = (items: { bytes: Uint8Array }[]): (string | undefined)[] => items.map((i) => ObjectMsg.decode(i.bytes).kind?.value.metadata?.name);

/** The ObjectStorage contract: revision line, CAS, indexes, lists, node lock, allocations. */
export function describeStorageContract(name: string, make: () => Promise<StorageUnderTest>): void {
  describe(`ObjectStorage contract: ${name}`, () => {
    let s: StorageUnderTest;
    before(async () => {
      s = await make();
    });
    after(async () => {
      await s?.stop();
    });

    it("one revision per write, a change record per write, CAS by revision; refusals move nothing", async () => {
      const st = s.storage;
      assert.equal(await st.write(op("create", "a")), 1);
      await assert.rejects(st.write(op("create", "a")), (e: unknown) => e instanceof StoreError && e.code === "exists" && e.currentRevision === 1);
      assert.equal(await st.write(op("update", "a", 1)), 2);
      await assert.rejects(st.write(op("update", "a", 1)), (e: unknown) => e instanceof StoreError && e.code === "conflict" && e.currentRevision === 2);
      await assert.rejects(st.write(op("delete", "zz", 1)), (e: unknown) => e instanceof StoreError && e.code === "not-found");
      assert.equal(await st.currentRevision(), 2);
      assert.equal(await s.changeRecords(), 2);
      assert.equal((await st.get("events", "default", "a"))?.revision, 2);
      assert.equal(await st.write(op("update", "a")), 3, "no expected revision: any");
    });

    it("secondary indexes follow the object; lists in name order, by namespace, in pages, at their revision", async () => {
      const st = s.storage;
      const idx = { index: "node", value: "n1" };
      await st.write({ ...op("create", "b"), indexAdd: [idx] });
      assert.deepEqual(await st.indexMembers("events", idx), ["default/b"]);
      assert.deepEqual(names((await st.list("events", { index: idx })).items), ["b"]);
      for (const n of ["c3", "c1", "c2"]) await st.write(op("create", n));
      const all = await st.list("events", { namespace: "default" });
      assert.deepEqual(names(all.items), ["a", "b", "c1", "c2", "c3"]);
      assert.equal(all.revision, await st.currentRevision());
      const p1 = await st.list("events", { namespace: "default", limit: 3 });
      assert.equal(p1.next, "default/c1");
      const p2 = await st.list("events", { namespace: "default", limit: 3, after: p1.next });
      assert.deepEqual(names(p2.items), ["c2", "c3"]);
      assert.equal(p2.next, undefined);
      assert.equal((await st.list("events", { namespace: "other" })).items.length, 0);
      await st.write({ ...op("delete", "b"), indexRemove: [idx] });
      assert.deepEqual(await st.indexMembers("events", idx), []);
      assert.equal(await st.get("events", "default", "b"), undefined);
    });

    it("the node lock lets one holder at a time per node, others at once", async () => {
      const st = s.storage;
      const order: string[] = [];
      const hold = (who: string, node: string, ms: number) =>
        st.withNodeLock(node, async () => {
          order.push(`${who}+`);
          await new Promise((r) => setTimeout(r, ms));
          order.push(`${who}-`);
          return who;
        });
      const [a, b, c] = await Promise.all([hold("a", "n1", 40), hold("b", "n1", 1), hold("c", "n2", 1)]);
      assert.deepEqual([a?.value, b?.value, c?.value], ["a", "b", "c"]);
      assert.ok(order.indexOf("b+") > order.indexOf("a-"), order.join(" "));
      assert.ok(order.indexOf("c-") < order.indexOf("a-"), order.join(" "));
    });

    it("restore puts a change back once, with its index entries: an older or repeated one changes nothing; the revision line moves up to it", async () => {
      const st = s.storage;
      const before = await st.currentRevision();
      const records = await s.changeRecords();
      const idx = { index: "node", value: "r1" };
      const put = { mode: "put" as const, resource: "widgets", namespace: "ns", name: "w", revision: before + 2, object: new Uint8Array([1, 2, 3]) };
      assert.equal(await st.restore({ ...put, indexAdd: [idx] }), true);
      assert.equal(await st.restore(put), false, "repeated");
      assert.equal(await st.restore({ ...put, revision: before + 1, object: new Uint8Array([9]) }), false, "older");
      const got = await st.get("widgets", "ns", "w");
      assert.deepEqual([...(got?.bytes ?? [])], [1, 2, 3]);
      assert.equal(got?.revision, before + 2);
      assert.equal(await st.currentRevision(), before + 2);
      assert.deepEqual(await st.indexMembers("widgets", idx), ["ns/w"]);
      assert.equal((await st.list("widgets")).items.length, 1);
      assert.equal(await st.restore({ mode: "delete", resource: "widgets", namespace: "ns", name: "w", revision: before + 3, indexRemove: [idx] }), true);
      assert.equal(await st.get("widgets", "ns", "w"), undefined);
      assert.deepEqual((await st.list("widgets")).items, []);
      assert.deepEqual(await st.indexMembers("widgets", idx), []);
      assert.equal(await st.currentRevision(), before + 3);
      assert.equal(await s.changeRecords(), records, "no change record: the log has them");
      assert.equal(await st.write(op("create", "after-restore")), before + 4, "the next write after the restored revisions");
    });

    it("allocations: one owner per item, idempotent for the owner, released only by it", async () => {
      const st = s.storage;
      assert.equal(await st.claim("cluster-ip", "10.96.0.10", "default/a"), true);
      assert.equal(await st.claim("cluster-ip", "10.96.0.10", "default/a"), true);
      assert.equal(await st.claim("cluster-ip", "10.96.0.10", "default/b"), false);
      assert.equal(await st.claim("node-port", "10.96.0.10", "default/b"), true, "pools are apart");
      await st.release("cluster-ip", "10.96.0.10", "default/b");
      assert.equal(await st.claim("cluster-ip", "10.96.0.10", "default/b"), false);
      await st.release("cluster-ip", "10.96.0.10", "default/a");
      assert.equal(await st.claim("cluster-ip", "10.96.0.10", "default/b"), true);
    });
  });
}
