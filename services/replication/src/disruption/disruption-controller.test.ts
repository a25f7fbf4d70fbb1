import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { conflict, unwrap } from "@choreo/kit";
import type { Deployment, ReplicaSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { Pod, ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import type { PodDisruptionBudget } from "@choreo/kit/gen/choreo/policy/v1/policy";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { FakeCache, pod, rc, RecordingClient } from "../testing.js";
import { DisruptionController } from "./disruption-controller.js";
import { podCacheTransform } from "../pod-cache.js";

const NOW = Date.parse("2026-11-26T01:00:00Z");

function budget(spec: Record<string, unknown>, status: Record<string, unknown> = {}): PodDisruptionBudget {
  return unwrap(
    fromKubeJson({
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name: "web", namespace: "default", uid: "uid-pdb", generation: 1, resourceVersion: "5" },
      spec: { selector: { matchLabels: { app: "web" } }, ...spec },
      status,
    }),
  ) as PodDisruptionBudget;
}

function setup() {
  const client = new RecordingClient();
  const pdbs = new FakeCache<PodDisruptionBudget>();
  const pods = new FakeCache<Pod>(podCacheTransform());
  const rcs = new FakeCache<ReplicationController>();
  const replicasets = new FakeCache<ReplicaSet>();
  const deployments = new FakeCache<Deployment>();
  const events: string[] = [];
  const ctl = new DisruptionController({
    client,
    pdbs,
    pods,
    rcs,
    replicasets,
    deployments,
    log: silentLogger(),
    now: () => NOW,
    recorder: { emit: (_r, type, reason) => events.push(`${type} ${reason}`) },
  });
  /** The statuses written, as the api would store them. */
  const written = (): PodDisruptionBudget[] => client.of("updateStatus").map((a) => unwrap(a.object) as PodDisruptionBudget);
  return { client, pdbs, pods, rcs, replicasets, deployments, events, ctl, written };
}

describe("disruption controller", () => {
  it("writes the status of a budget over an RC's pods, and nothing when it is unchanged", async () => {
    const t = setup();
    t.rcs.put(rc("web", 4));
    for (const n of ["a", "b", "c", "d"]) t.pods.put(pod(`web-${n}`, { owner: { name: "web", uid: "uid-web" }, ready: n !== "d" }));
    t.pdbs.put(budget({ maxUnavailable: 1 }));
    await t.ctl.reconcile("default/web");
    const [w] = t.written();
    assert.deepEqual(
      [w?.status?.expectedPods, w?.status?.desiredHealthy, w?.status?.currentHealthy, w?.status?.disruptionsAllowed, w?.status?.observedGeneration],
      [4, 3, 3, 0, 1],
    );
    assert.equal(w?.metadata?.resourceVersion, "5", "written on the version read");
    t.pdbs.put(w!);
    await t.ctl.reconcile("default/web");
    assert.equal(t.written().length, 1, "an unchanged status is not written again");
  });

  it("a pod's change enqueues the budgets selecting it", () => {
    const t = setup();
    const keys: string[] = [];
    t.ctl.controller.enqueue = (k: string) => void keys.push(k);
    t.pdbs.put(budget({ minAvailable: 1 }));
    keys.length = 0;
    t.pods.put(pod("other", { labels: { app: "other" } }));
    assert.deepEqual(keys, []);
    t.pods.put(pod("web-a"));
    t.pods.remove("default/web-a");
    assert.deepEqual(keys, ["default/web", "default/web"]);
  });

  it("a ReplicaSet's pods count at its Deployment's scale", async () => {
    const t = setup();
    t.deployments.put(
      unwrap(
        fromKubeJson({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "d", namespace: "default", uid: "uid-d" }, spec: { replicas: 6 } }),
      ) as Deployment,
    );
    for (const [rs, uid] of [
      ["d-1", "uid-rs1"],
      ["d-2", "uid-rs2"],
    ] as const) {
      const v = unwrap(
        fromKubeJson({ apiVersion: "apps/v1", kind: "ReplicaSet", metadata: { name: rs, namespace: "default", uid }, spec: { replicas: 3 } }),
      ) as ReplicaSet;
      v.metadata!.ownerReferences = [{ apiVersion: "apps/v1", kind: "Deployment", name: "d", uid: "uid-d", controller: true, blockOwnerDeletion: true }];
      t.replicasets.put(v);
      t.pods.put(pod(`${rs}-x`, { owner: { kind: "ReplicaSet", name: rs, uid } }));
    }
    t.pdbs.put(budget({ minAvailable: "50%" }));
    await t.ctl.reconcile("default/web");
    const s = t.written()[0]?.status;
    assert.deepEqual([s?.expectedPods, s?.desiredHealthy, s?.currentHealthy, s?.disruptionsAllowed], [6, 3, 2, 0]);
  });

  it("an unknown controller fails safe: 0 allowed, SyncFailed, a warning", async () => {
    const t = setup();
    t.pods.put(pod("web-a", { owner: { kind: "StatefulSet", name: "s", uid: "uid-s" } }));
    t.pdbs.put(budget({ maxUnavailable: 1 }, { observedGeneration: 1, disruptionsAllowed: 1 }));
    await t.ctl.reconcile("default/web");
    const s = t.written()[0]?.status;
    assert.equal(s?.disruptionsAllowed, 0);
    assert.equal(s?.conditions.find((c) => c.type === "DisruptionAllowed")?.reason, "SyncFailed");
    assert.ok(t.events.includes("Warning CalculateExpectedPodCountFailed"), t.events.join(", "));
  });

  it("a conflicting status write (an eviction wrote first) is left to the next sync", async () => {
    const t = setup();
    t.pods.put(pod("web-a"));
    t.pdbs.put(budget({ minAvailable: 1 }));
    t.client.fail.updateStatus = conflict("poddisruptionbudgets", "web", "the object has been modified");
    await t.ctl.reconcile("default/web");
    assert.equal(t.client.of("updateStatus").length, 1);
  });

  it("keeps a fresh disruptedPods entry (the pod not healthy) and requeues at its timeout", async () => {
    const t = setup();
    for (const n of ["a", "b"]) t.pods.put(pod(`web-${n}`));
    const at = new Date(NOW - 30_000).toISOString().replace(/\.\d{3}Z$/, "Z");
    t.pdbs.put(budget({ minAvailable: 1 }, { disruptedPods: { "web-a": at } }));
    const r = await t.ctl.reconcile("default/web");
    const s = t.written()[0]?.status;
    assert.deepEqual(s?.disruptedPods, { "web-a": at });
    assert.equal(s?.currentHealthy, 1);
    assert.equal(s?.disruptionsAllowed, 0);
    assert.deepEqual(r, { requeueAfterMs: 90_000 });
  });
});
