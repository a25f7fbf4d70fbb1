import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { rejects } from "../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";
import { testPod } from "../../testing/objects.js";

const pod = testPod;

describe("pod graceful deletion", () => {
  // On the in-memory storage: the deletion hooks are the pod strategy's, no server needed.
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  it("deletes a bound pod gracefully and at once with gracePeriodSeconds=0", async () => {
    await s.client.create(pod("p-grace"));
    await s.client.bind("default", "p-grace", "node-a");
    const terminating = unwrap(await s.client.delete("pods", "default", "p-grace")) as Pod;
    assert.ok(terminating.metadata?.deletionTimestamp, "deletionTimestamp set");
    assert.equal(terminating.metadata?.deletionGracePeriodSeconds, 30);
    await s.client.get("pods", "default", "p-grace"); // still there
    await s.client.delete("pods", "default", "p-grace", { gracePeriodSeconds: 0 });
    await rejects(s.client.get("pods", "default", "p-grace"), 404, "NotFound", /pods "p-grace" not found/);
    const empty = await s.client.list("pods", { fieldSelector: "spec.nodeName=node-a,metadata.name=p-grace" });
    assert.equal(empty.items.length, 0, "the node index forgets the pod");
  });
});
