import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { KINDS, selectableFields, unwrap } from "@choreo/kit";
import { Object as ObjectMsg, Reply, WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { eventParts, replyWithWrittenObject, withRevision } from "./event-revision.js";

/** What the relay did before withRevision, and still does when it answers undefined: decode, set, encode. */
function reference(record: Uint8Array, rev: number): Uint8Array {
  const ev = WatchEvent.decode(record);
  ev.revision = rev;
  const meta = ev.object?.kind?.value.metadata;
  if (meta) meta.resourceVersion = String(rev);
  return WatchEvent.encode(ev).finish();
}

/** A change record as the generic store writes it: the event's other fields, then the object's bytes as field 2. */
function record(object: ObjectMsg, type = "MODIFIED", prev?: ObjectMsg): Uint8Array {
  const pv = prev && unwrap(prev);
  return WatchEvent.encode({
    type,
    object: undefined,
    status: undefined,
    revision: 0,
    prevLabels: pv?.metadata?.labels ?? {},
    prevFields:
      prev && pv
        ? selectableFields(
            KINDS.find((k) => k.case === prev.kind?.$case)!,
            pv,
          )
        : {},
    hasPrev: Boolean(prev),
  })
    .uint32(18)
    .bytes(ObjectMsg.encode(object).finish())
    .finish();
}

const meta = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  namespace: "default",
  uid: "0b5c7c9e-3f7e-4c3a-9a57-7b0f5f1c2d11",
  generation: 3,
  creationTimestamp: "2026-11-27T01:00:00Z",
  labels: { app: "web", tier: "front" },
  annotations: { note: "x" },
  finalizers: ["example.com/f"],
  ownerReferences: [{ apiVersion: "v1", kind: "ReplicationController", name: "rc", uid: "u-1", controller: true }],
  managedFields: [{ manager: "kubectl", operation: "Update", apiVersion: "v1", time: "2026-11-27T01:00:00Z", fieldsType: "FieldsV1", fieldsV1: {} }],
  ...extra,
});

const pod = (name: string): ObjectMsg =>
  fromKubeJson({
    apiVersion: "v1",
    kind: "Pod",
    metadata: meta(name),
    spec: { nodeName: "node-7", containers: [{ name: "c", image: "busybox", resources: { requests: { cpu: "100m", memory: "64Mi" } } }] },
    status: { phase: "Running", podIP: "10.244.7.9", conditions: [{ type: "Ready", status: "True" }] },
  });

const REVISIONS = [1, 9, 10, 127, 128, 16_383, 16_384, 99_999, 2_097_152, 2 ** 31, 2 ** 40 + 3, Number.MAX_SAFE_INTEGER];

describe("withRevision", () => {
  it("gives the bytes of decode → set revision and resourceVersion → encode, for every kind and revisions across varint sizes", () => {
    for (const info of KINDS) {
      const o = fromKubeJson({ apiVersion: info.apiVersion, kind: info.kind, metadata: meta(`x-${info.resource}`) });
      for (const type of ["ADDED", "MODIFIED", "DELETED"]) {
        const rec = record(o, type, type === "MODIFIED" ? o : undefined);
        for (const rev of REVISIONS) assert.deepEqual(withRevision(rec, rev), reference(rec, rev), `${info.kind} ${type} at ${rev}`);
      }
    }
  });

  it("the same for a pod as the store writes it, an event already in field order, and metadata with nothing after resourceVersion", () => {
    const p = pod("p");
    const bare = fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "bare" } });
    const canonical = WatchEvent.encode({ type: "ADDED", object: p, status: undefined, revision: 0, prevLabels: {}, prevFields: {}, hasPrev: false }).finish();
    for (const rec of [record(p, "MODIFIED", pod("p")), canonical, record(bare, "ADDED")])
      for (const rev of REVISIONS) assert.deepEqual(withRevision(rec, rev), reference(rec, rev));
    const out = WatchEvent.decode(withRevision(record(p), 4242)!);
    assert.equal(out.revision, 4242);
    assert.equal(unwrap(out.object!).metadata?.resourceVersion, "4242");
  });

  it("the same where a length grows by a byte (ObjectMeta past 127 bytes, the kind past 16,383)", () => {
    for (let n = 60; n <= 130; n++) {
      const o = fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a".repeat(n) }, data: { k: "v" } });
      const rec = record(o, "ADDED");
      for (const rev of [5, 123_456]) assert.deepEqual(withRevision(rec, rev), reference(rec, rev), `name of ${n} at ${rev}`);
    }
    for (let n = 16_300; n <= 16_400; n++) {
      const o = fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "big" }, data: { k: "v".repeat(n) } });
      const rec = record(o, "ADDED");
      assert.deepEqual(withRevision(rec, 77), reference(rec, 77), `data of ${n}`);
    }
  });

  it("answers undefined (the relay decodes) for what is not a change record as the store writes it", () => {
    const p = pod("p");
    const withRev = WatchEvent.encode({ type: "ADDED", object: p, status: undefined, revision: 5, prevLabels: {}, prevFields: {}, hasPrev: false }).finish();
    const rv = fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", resourceVersion: "5" } });
    const noObject = WatchEvent.encode({
      type: "ADDED",
      object: undefined,
      status: undefined,
      revision: 0,
      prevLabels: {},
      prevFields: {},
      hasPrev: false,
    }).finish();
    const rec = record(p);
    assert.equal(withRevision(withRev, 6), undefined, "a revision already set");
    assert.equal(withRevision(record(rv), 6), undefined, "a resourceVersion already set");
    assert.equal(withRevision(noObject, 6), undefined, "no object");
    assert.equal(withRevision(rec.subarray(0, rec.length - 3), 6), undefined, "cut short");
    assert.equal(withRevision(new Uint8Array([0xff, 0xff, 0xff]), 6), undefined, "not protobuf");
    assert.equal(withRevision(new Uint8Array(0), 6), undefined, "empty");
    assert.equal(withRevision(rec, 0), undefined, "revision 0");
  });
});

describe("eventParts", () => {
  it("gives the type and the object's encoded bytes of an event, as views, whatever the other fields", () => {
    for (const [i, rev] of [0, 1, 128, 2 ** 40 + 3].entries()) {
      const p = pod(`p-${i}`);
      const ev = WatchEvent.encode({
        type: "MODIFIED",
        object: p,
        status: undefined,
        revision: rev,
        prevLabels: { app: "old" },
        prevFields: { "spec.nodeName": "n" },
        hasPrev: true,
      }).finish();
      const parts = eventParts(ev);
      assert.ok(parts);
      assert.equal(Buffer.from(parts.type).toString(), "MODIFIED");
      assert.deepEqual(Buffer.from(parts.object), Buffer.from(ObjectMsg.encode(p).finish()));
      assert.equal(parts.object.buffer, ev.buffer, "a view of the event's bytes");
    }
    // The relay's publish (withRevision): its object is the encoder's bytes of the object with its resourceVersion.
    const published = withRevision(record(pod("q"), "ADDED"), 42)!;
    const decoded = WatchEvent.decode(published);
    assert.deepEqual(Buffer.from(eventParts(published)!.object), Buffer.from(ObjectMsg.encode(decoded.object!).finish()));
    assert.equal(unwrap(ObjectMsg.decode(eventParts(published)!.object)).metadata?.resourceVersion, "42");
    const noObject = WatchEvent.encode({
      type: "ADDED",
      object: undefined,
      status: undefined,
      revision: 1,
      prevLabels: {},
      prevFields: {},
      hasPrev: false,
    }).finish();
    assert.equal(eventParts(noObject), undefined, "no object");
    const rec = record(pod("p"));
    assert.equal(eventParts(rec.subarray(0, rec.length - 3)), undefined, "cut short");
    assert.equal(eventParts(new Uint8Array([0xff, 0xff, 0xff])), undefined, "not protobuf");
    const twice = new Uint8Array([...rec, ...rec.subarray(rec.indexOf(18))]);
    assert.equal(eventParts(twice), undefined, "two objects");
  });
});

describe("replyWithWrittenObject", () => {
  /** What the NATS door encoded before: Reply { object } with the resourceVersion set on the decoded object. */
  function replyReference(object: Uint8Array, rev: number): Uint8Array {
    const o = ObjectMsg.decode(object);
    const m = o.kind?.value.metadata;
    if (m) m.resourceVersion = String(rev);
    return Reply.encode({ result: { $case: "object", value: o } }).finish();
  }

  it("gives the bytes of Reply { object } with the resourceVersion written in, for every kind, across varint sizes and lengths that grow by a byte", () => {
    for (const info of KINDS) {
      const o = ObjectMsg.encode(fromKubeJson({ apiVersion: info.apiVersion, kind: info.kind, metadata: meta(`x-${info.resource}`) })).finish();
      for (const rev of REVISIONS) assert.deepEqual(replyWithWrittenObject(o, rev), replyReference(o, rev), `${info.kind} at ${rev}`);
    }
    const bare = ObjectMsg.encode(fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "bare" } })).finish();
    const p = ObjectMsg.encode(pod("p")).finish();
    for (const o of [bare, p]) for (const rev of REVISIONS) assert.deepEqual(replyWithWrittenObject(o, rev), replyReference(o, rev));
    for (const n of [60, 100, 110, 118, 119, 120, 121, 122, 125, 130, 16_370, 16_371, 16_372, 16_373, 16_374, 16_375, 16_380, 16_400]) {
      const o = ObjectMsg.encode(
        fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a".repeat(Math.min(n, 200)) }, data: { k: "v".repeat(n) } }),
      ).finish();
      for (const rev of [5, 123_456]) assert.deepEqual(replyWithWrittenObject(o, rev), replyReference(o, rev), `${n} at ${rev}`);
    }
    const decoded = Reply.decode(replyWithWrittenObject(p, 4242)!);
    assert.equal(decoded.result?.$case, "object");
    assert.equal(unwrap(decoded.result.value as ObjectMsg).metadata?.resourceVersion, "4242");
  });

  it("answers undefined (the door encodes) for what is not an object as the store writes it", () => {
    const rv = ObjectMsg.encode(fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", resourceVersion: "5" } })).finish();
    const noMeta = ObjectMsg.encode(fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", data: { k: "v" } })).finish();
    const p = ObjectMsg.encode(pod("p")).finish();
    assert.equal(replyWithWrittenObject(rv, 6), undefined, "a resourceVersion already set");
    assert.equal(replyWithWrittenObject(noMeta, 6), undefined, "no metadata");
    assert.equal(replyWithWrittenObject(p.subarray(0, p.length - 3), 6), undefined, "cut short");
    assert.equal(replyWithWrittenObject(new Uint8Array([0xff, 0xff, 0xff]), 6), undefined, "not protobuf");
    assert.equal(replyWithWrittenObject(new Uint8Array(0), 6), undefined, "empty");
    assert.equal(replyWithWrittenObject(p, 0), undefined, "revision 0");
  });
});
