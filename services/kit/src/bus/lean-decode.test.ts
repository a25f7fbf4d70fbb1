// A pod event decoded without its managedFields is the whole decode with
// `metadata.managedFields` empty, nothing else changed — whatever the sizes
// around the rewritten length prefixes; anything it cannot cut safely is
// decoded whole.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { wrap } from "../api/kinds.js";
import { WatchEvent } from "../gen/choreo/api/v1/api.js";
import { Node, Pod } from "../gen/choreo/core/v1/core.js";
import { ObjectMeta } from "../gen/choreo/meta/v1/meta.js";
import { fromKubeJson } from "../kube-json/index.js";
import { decodeEvent, encodeEvent } from "./events.js";
import { cutsManagedFields, decodeEventWithoutManagedFields } from "./lean-decode.js";

/** The lean decode equals the whole one with managedFields emptied, fields in the same order. */
function same(data: Uint8Array, message?: string): void {
  const lean = decodeEventWithoutManagedFields(data);
  const whole = expected(data);
  assert.deepStrictEqual(lean, whole, message);
  assert.equal(JSON.stringify(lean), JSON.stringify(whole), message);
}

function pod(opts: { managers?: number; fieldsV1Size?: number; labelSize?: number } = {}): Pod {
  const o = fromKubeJson({
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "web-1",
      namespace: "default",
      uid: "uid-1",
      resourceVersion: "42",
      labels: { app: "web", pad: "x".repeat(opts.labelSize ?? 3) },
      annotations: { note: "kept" },
      ownerReferences: [{ apiVersion: "v1", kind: "ReplicationController", name: "web", uid: "rc-uid", controller: true }],
      finalizers: ["f"],
      managedFields: Array.from({ length: opts.managers ?? 3 }, (_, i) => ({
        manager: `manager-${i}`,
        operation: "Update",
        apiVersion: "v1",
        time: "2026-11-27T05:00:00Z",
        fieldsType: "FieldsV1",
        fieldsV1: { "f:metadata": { "f:labels": { "f:pad": {} } }, "f:pad": "y".repeat(opts.fieldsV1Size ?? 20) },
        ...(i === 2 ? { subresource: "status" } : {}),
      })),
    },
    spec: { nodeName: "node-1", containers: [{ name: "c", image: "pause", env: [{ name: "A", value: "1" }], resources: { requests: { cpu: "10m" } } }] },
    status: { phase: "Running", podIP: "10.0.0.1", conditions: [{ type: "Ready", status: "True" }] },
  });
  return (o.kind as { value: Pod }).value;
}

function event(p: Pod): Uint8Array {
  return encodeEvent(
    WatchEvent.fromPartial({
      type: "MODIFIED",
      revision: 1234567,
      object: wrap("pod", p),
      prevLabels: { app: "old" },
      prevFields: { "spec.nodeName": "" },
      hasPrev: true,
    }),
  );
}

/** The whole decode with the pod's managedFields emptied. */
function expected(data: Uint8Array): WatchEvent {
  const ev = decodeEvent(data);
  const meta = (ev.object?.kind?.value as Pod | undefined)?.metadata;
  if (meta) meta.managedFields = [];
  return ev;
}

describe("decodeEventWithoutManagedFields", () => {
  it("decodes a pod event as the whole decode does, managedFields left empty (not decoded)", () => {
    const data = event(pod());
    assert.equal((decodeEvent(data).object?.kind?.value as Pod).metadata?.managedFields.length, 3);
    assert.ok(cutsManagedFields(data));
    same(data);
  });

  it("is right across length prefix sizes (127/128, 16383/16384 bytes)", () => {
    let checked = 0;
    for (const labelSize of [0, 1, 30, 60, 90, 100, 110, 120, 16_000, 16_200, 16_300]) {
      for (const fieldsV1Size of [0, 5, 40, 100, 130, 200, 16_500]) {
        for (const managers of [1, 3]) {
          const data = event(pod({ managers, labelSize, fieldsV1Size }));
          assert.ok(cutsManagedFields(data));
          same(data, `labels ${labelSize}, fieldsV1 ${fieldsV1Size}, managers ${managers}`);
          checked++;
        }
      }
    }
    assert.equal(checked, 154);
  });

  it("decodes whole when there is nothing to leave out: no managedFields, not a pod, not an object", () => {
    const none = event(pod({ managers: 0 }));
    assert.equal(cutsManagedFields(none), false);
    same(none);
    const node = encodeEvent(
      WatchEvent.fromPartial({
        type: "ADDED",
        revision: 7,
        object: wrap("node", Node.fromPartial({ metadata: { name: "n", managedFields: [{ manager: "m", operation: "Update" }] } })),
      }),
    );
    assert.equal(cutsManagedFields(node), false);
    assert.deepStrictEqual(decodeEventWithoutManagedFields(node), decodeEvent(node), "a node keeps its managedFields");
    const bookmark = encodeEvent(WatchEvent.fromPartial({ type: "BOOKMARK", revision: 9 }));
    assert.equal(cutsManagedFields(bookmark), false);
    same(bookmark);
  });

  it("decodes whole what it cannot leave out safely: managedFields not last, another kind beside the pod, malformed bytes", () => {
    // An ObjectMeta with a field after its managedFields (not how the api writes one, valid protobuf still).
    const p = pod();
    const meta = ObjectMeta.encode(p.metadata!)
      .uint32((13 << 3) | 2)
      .string("after")
      .finish();
    const w = new BinaryWriter();
    w.uint32((3 << 3) | 2).bytes(meta);
    const podBytes = w.finish();
    const evBytes = new BinaryWriter()
      .uint32((1 << 3) | 2)
      .string("ADDED")
      .uint32((2 << 3) | 2)
      .bytes(
        new BinaryWriter()
          .uint32((3 << 3) | 2)
          .bytes(podBytes)
          .finish(),
      )
      .finish();
    assert.equal(cutsManagedFields(evBytes), false);
    const whole = decodeEvent(evBytes);
    assert.deepEqual((whole.object?.kind?.value as Pod).metadata?.finalizers, ["f", "after"]);
    assert.deepStrictEqual(decodeEventWithoutManagedFields(evBytes), whole);

    // An Object with a node's field after the pod's: the oneof's last field (the node) wins.
    const objectBytes = new BinaryWriter()
      .uint32((3 << 3) | 2)
      .bytes(Pod.encode(pod()).finish())
      .uint32((2 << 3) | 2)
      .bytes(Node.encode(Node.fromPartial({ metadata: { name: "n" } })).finish())
      .finish();
    const twoKinds = new BinaryWriter()
      .uint32((2 << 3) | 2)
      .bytes(objectBytes)
      .finish();
    assert.equal(cutsManagedFields(twoKinds), false);
    assert.equal(decodeEventWithoutManagedFields(twoKinds).object?.kind?.$case, "node");

    const data = event(pod());
    for (const cut of [1, 5, 20, data.length - 3]) {
      const truncated = data.subarray(0, cut);
      assert.equal(cutsManagedFields(truncated), false, `truncated at ${cut}`);
      assert.throws(() => decodeEventWithoutManagedFields(truncated), `truncated at ${cut}: the whole decode's error`);
    }
  });
});
