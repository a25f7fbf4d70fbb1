import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { rejects } from "../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";

describe("the scale subresource", () => {
  // On the in-memory storage: the subresource is the workloads', no server needed.
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  it("scales a replication controller through the scale subresource", async () => {
    await s.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "ReplicationController",
        metadata: { name: "rc-scale", namespace: "default" },
        spec: { replicas: 1, template: { metadata: { labels: { app: "s" } }, spec: { containers: [{ name: "c", image: "i" }] } } },
      }),
    );
    const scale = await s.client.getScale("replicationcontrollers", "default", "rc-scale");
    assert.equal(scale.spec?.replicas, 1);
    assert.equal(scale.status?.selector, "app=s");
    const after = await s.client.updateScale("replicationcontrollers", "default", "rc-scale", 5);
    assert.equal(after.spec?.replicas, 5);
    await rejects(s.client.updateScale("replicationcontrollers", "default", "rc-scale", 3, "1"), 409, "Conflict");
    await rejects(s.client.updateScale("replicationcontrollers", "default", "rc-scale", -1), 422, "Invalid");
  });
});
