import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { rejects } from "../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";
import { testPod } from "../../testing/objects.js";

describe("dryRun=All: every step but the write", () => {
  // On the in-memory storage; each case reads the storage's revision before and after.
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });
  const revision = async (): Promise<string> => (await s.client.list("pods")).metadata?.resourceVersion ?? "";
  const svc = (name: string, clusterIP?: string) =>
    fromKubeJson({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace: "default" },
      spec: { type: "NodePort", selector: { app: "web" }, ports: [{ port: 80, nodePort: 30123 }], ...(clusterIP ? { clusterIP } : {}) },
    });

  it("a dry-run create is defaulted and validated but not stored; its allocations are given back", async () => {
    const before = await revision();
    const p = unwrap(await s.registry.create({ object: testPod("dry"), dryRun: true })) as Pod;
    assert.equal(p.metadata?.name, "dry");
    assert.ok(p.metadata?.uid && p.metadata.creationTimestamp, "metadata is filled as for a real create");
    assert.equal(p.metadata?.resourceVersion, "");
    assert.equal(p.spec?.containers[0]?.terminationMessagePath, "/dev/termination-log", "defaults applied");
    await rejects(s.client.get("pods", "default", "dry"), 404, "NotFound");
    assert.equal(await revision(), before, "no revision moved");
    // Invalid input is refused as without dryRun.
    await rejects(s.registry.create({ object: testPod("Bad_Name"), dryRun: true }), 422, "Invalid");

    const dry = unwrap(await s.registry.create({ object: svc("dry-svc", "10.96.201.9"), dryRun: true })) as Service;
    assert.equal(dry.spec?.clusterIp, "10.96.201.9");
    assert.equal(dry.spec?.ports[0]?.nodePort, 30123);
    // The IP and the node port are free again: a real create takes both.
    const real = unwrap(await s.client.create(svc("real-svc", "10.96.201.9"))) as Service;
    assert.equal(real.spec?.clusterIp, "10.96.201.9");
    assert.equal(real.spec?.ports[0]?.nodePort, 30123);
    // A dry-run create of a name that exists meets it.
    await rejects(s.registry.create({ object: svc("real-svc"), dryRun: true }), 409, "AlreadyExists");
  });

  it("a dry-run update, patch and delete answer as the real ones would and change nothing", async () => {
    const stored = unwrap(await s.client.create(testPod("kept"))) as Pod;
    const rv = stored.metadata!.resourceVersion;
    const before = await revision();

    const edited = structuredClone(stored);
    edited.metadata!.labels = { tier: "dry" };
    const updated = unwrap(await s.registry.update({ object: { kind: { $case: "pod", value: edited } }, dryRun: true })) as Pod;
    assert.deepEqual(updated.metadata?.labels, { tier: "dry" });
    assert.equal(updated.metadata?.resourceVersion, rv, "the stored version, unchanged");
    const stale = structuredClone(edited);
    stale.metadata!.resourceVersion = "1";
    await rejects(s.registry.update({ object: { kind: { $case: "pod", value: stale } }, dryRun: true }), 409, "Conflict");

    const patched = unwrap(
      await s.registry.patch({
        resource: "pods",
        namespace: "default",
        name: "kept",
        patchType: "application/merge-patch+json",
        patch: JSON.stringify({ metadata: { labels: { patched: "yes" } } }),
        subresource: "",
        dryRun: true,
      }),
    ) as Pod;
    assert.equal(patched.metadata?.labels["patched"], "yes");

    const deleted = unwrap(
      await s.registry.delete({
        resource: "pods",
        namespace: "default",
        name: "kept",
        options: { gracePeriodSeconds: 0, preconditions: undefined, propagationPolicy: "", dryRun: ["All"] },
      }),
    ) as Pod;
    assert.equal(deleted.metadata?.name, "kept");

    const now = unwrap(await s.client.get("pods", "default", "kept")) as Pod;
    assert.equal(now.metadata?.resourceVersion, rv);
    assert.deepEqual(now.metadata?.labels, stored.metadata?.labels);
    assert.equal(now.metadata?.deletionTimestamp, "");
    assert.equal(await revision(), before, "no revision moved");
  });
});
