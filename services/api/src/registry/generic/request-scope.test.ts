import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";
import { testPod } from "../../testing/objects.js";
import { admissionScope, requestUser } from "./admission-context.js";
import { isDryRun } from "./dry-run.js";
import { NO_SCOPE } from "./request-scope.js";

describe("the request scope, passed with the request", () => {
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  it("a request's view of the store carries its scope, the store itself none; views nest keeping the other parts", () => {
    const store = s.registry.store;
    const alice = store.withScope(admissionScope({ user: "alice", warn: () => undefined }));
    const dry = alice.withScope({ dryRun: true });
    assert.equal(store.scope, NO_SCOPE);
    assert.equal(requestUser(store), "");
    assert.equal(requestUser(alice), "alice");
    assert.equal(isDryRun(alice), false);
    assert.equal(requestUser(dry), "alice", "a part set inside another scope keeps the others");
    assert.equal(isDryRun(dry), true);
    assert.equal(isDryRun(dry.withScope({ manager: undefined })), true);
    assert.equal(dry.storage, store.storage, "the view shares everything else");
    assert.equal(dry.strategies, store.strategies);
  });

  it("concurrent requests keep their own scope through the registry: warnings go to the request that caused them", async () => {
    await s.client.create(
      fromKubeJson({ apiVersion: "v1", kind: "Namespace", metadata: { name: "warned", labels: { "pod-security.kubernetes.io/warn": "restricted" } } }),
    );
    const warned: Record<string, string[]> = { a: [], b: [] };
    const as = (who: "a" | "b") => s.client.as(admissionScope({ user: who, warn: (t) => warned[who].push(t) }));
    const created = await Promise.all([
      as("a").create(testPod("pa", {}, "warned")),
      as("b").create(testPod("pb", {}, "default")),
      as("a").create(testPod("pa-dry", {}, "warned"), true),
    ]);
    assert.deepEqual(
      created.map((o) => (unwrap(o) as Pod).metadata?.name),
      ["pa", "pb", "pa-dry"],
    );
    assert.equal(warned.a.length, 2, "both of a's pods in the warned namespace are warned about");
    assert.deepEqual(warned.b, [], "b's pod, in a namespace without a warn level, is not");
    assert.match(warned.a[0]!, /would violate PodSecurity "restricted:latest"/);
  });
});
