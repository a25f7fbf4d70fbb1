import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { BindRequest, CreateRequest, Reply, UpdateRequest, type Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";
import { testPod } from "../../testing/objects.js";
import { writtenReply } from "./written.js";

/** What the NATS door encodes without the written bytes. */
const encoded = (o: ApiObject): Uint8Array => Reply.encode({ result: { $case: "object", value: o } }).finish();

describe("the NATS door's answer from the bytes a write wrote", () => {
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  it("is the encoded Reply of the object create, update, updateStatus and bind return", async () => {
    const created = await s.registry.create(CreateRequest.fromPartial({ object: testPod("w-1") }));
    assert.deepEqual(writtenReply(created), encoded(created));
    const pod = unwrap(created) as Pod;
    pod.metadata!.labels = { app: "web", tier: "front" };
    const updated = await s.registry.update(UpdateRequest.fromPartial({ object: created }));
    assert.deepEqual(writtenReply(updated), encoded(updated));
    assert.equal((unwrap(updated) as Pod).metadata?.labels["tier"], "front");
    const bound = await s.registry.bind(BindRequest.fromPartial({ namespace: "default", name: "w-1", binding: { target: { name: "node-a" } } }));
    assert.deepEqual(writtenReply(bound), encoded(bound));
    const p = unwrap(bound) as Pod;
    p.status = { ...p.status!, phase: "Running", podIp: "10.244.0.9" };
    const status = await s.registry.updateStatus(UpdateRequest.fromPartial({ object: bound, subresource: "status" }));
    assert.deepEqual(writtenReply(status), encoded(status));
    assert.equal((unwrap(status) as Pod).status?.phase, "Running");
    const cm = await s.registry.create(
      CreateRequest.fromPartial({
        object: fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "w-cm", namespace: "default" }, data: { k: "v" } }),
      }),
    );
    assert.deepEqual(writtenReply(cm), encoded(cm));
  });

  it("is undefined (the door encodes) for an object changed after its write, one never written, a dry run, and a sealed Secret", async () => {
    const created = await s.registry.create(CreateRequest.fromPartial({ object: testPod("w-2") }));
    (unwrap(created) as Pod).metadata!.resourceVersion = "1";
    assert.equal(writtenReply(created), undefined, "resourceVersion changed");
    assert.equal(writtenReply(await s.registry.get({ resource: "pods", namespace: "default", name: "w-2" })), undefined, "read, not written");
    assert.equal(writtenReply(await s.registry.create(CreateRequest.fromPartial({ object: testPod("w-3"), dryRun: true }))), undefined, "dry run");
    assert.equal(writtenReply(undefined), undefined);
    const secret = await s.registry.create(
      CreateRequest.fromPartial({
        object: fromKubeJson({ apiVersion: "v1", kind: "Secret", metadata: { name: "w-s", namespace: "default" }, stringData: { k: "v" } }),
      }),
    );
    assert.equal(writtenReply(secret), undefined, "the stored form is sealed: its bytes are not the answer");
  });
});
