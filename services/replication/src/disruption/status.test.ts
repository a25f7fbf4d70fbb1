import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { emptyMeta } from "@choreo/kit";
import { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { OwnerReference } from "@choreo/kit/gen/choreo/meta/v1/meta";
import { PodDisruptionBudget } from "@choreo/kit/gen/choreo/policy/v1/policy";
import { computeStatus, DELETION_TIMEOUT_MS, failSafeStatus, scaled, SyncError, type ScaleOf } from "./status.js";

const NOW = Date.parse("2026-11-26T01:00:00Z");
const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
const int = (n: number) => ({ value: { $case: "intVal" as const, value: n } });
const pct = (s: string) => ({ value: { $case: "strVal" as const, value: s } });

const rcRef = (uid: string): OwnerReference => ({
  apiVersion: "v1",
  kind: "ReplicationController",
  name: uid,
  uid,
  controller: true,
  blockOwnerDeletion: true,
});

function pod(name: string, opts: { ready?: boolean; owner?: string; deleting?: boolean } = {}): Pod {
  return Pod.fromPartial({
    metadata: emptyMeta({
      name,
      namespace: "default",
      labels: { app: "web" },
      ownerReferences: opts.owner ? [rcRef(opts.owner)] : [],
      deletionTimestamp: opts.deleting ? iso(NOW) : "",
    }),
    status: { phase: "Running", conditions: [{ type: "Ready", status: opts.ready === false ? "False" : "True" }] },
  });
}

function pdb(spec: Partial<PodDisruptionBudget["spec"]>, status: Partial<PodDisruptionBudget["status"]> = {}, generation = 1): PodDisruptionBudget {
  return PodDisruptionBudget.fromPartial({
    metadata: emptyMeta({ name: "web", namespace: "default", generation }),
    spec: { selector: { matchLabels: { app: "web" }, matchExpressions: [] }, ...spec },
    status,
  });
}

/** Fake controllers: uid → replicas. */
const scales =
  (m: Record<string, number>): ScaleOf =>
  (_ns, ref) =>
    m[ref.uid] === undefined ? undefined : { uid: ref.uid, replicas: m[ref.uid]! };

describe("disruption status", () => {
  it("minAvailable as a number: expected is the pods matched, allowed the healthy above it", () => {
    const pods = [pod("a"), pod("b"), pod("c"), pod("d", { ready: false })];
    const { status } = computeStatus(pdb({ minAvailable: int(2) }), pods, scales({}), NOW);
    assert.equal(status.expectedPods, 4);
    assert.equal(status.currentHealthy, 3);
    assert.equal(status.desiredHealthy, 2);
    assert.equal(status.disruptionsAllowed, 1);
    assert.equal(status.observedGeneration, 1);
    const cond = status.conditions.find((c) => c.type === "DisruptionAllowed");
    assert.deepEqual([cond?.status, cond?.reason, cond?.lastTransitionTime], ["True", "SufficientPods", iso(NOW)]);
  });

  it("maxUnavailable and percentages read the controllers' scale, rounding up", () => {
    // An RC of 4 with 3 pods up: maxUnavailable 1 → 3 desired; 50% of 4 → 2 desired; 30% unavailable of 4 → ceil(1.2) = 2.
    const pods = [pod("a", { owner: "rc" }), pod("b", { owner: "rc" }), pod("c", { owner: "rc" })];
    const at = (spec: Partial<PodDisruptionBudget["spec"]>) => computeStatus(pdb(spec), pods, scales({ rc: 4 }), NOW).status;
    assert.deepEqual(
      [at({ maxUnavailable: int(1) }).expectedPods, at({ maxUnavailable: int(1) }).desiredHealthy, at({ maxUnavailable: int(1) }).disruptionsAllowed],
      [4, 3, 0],
    );
    assert.equal(at({ minAvailable: pct("50%") }).desiredHealthy, 2);
    assert.equal(at({ minAvailable: pct("50%") }).disruptionsAllowed, 1);
    assert.equal(at({ maxUnavailable: pct("30%") }).desiredHealthy, 2);
    assert.equal(at({ maxUnavailable: int(9) }).desiredHealthy, 0);
    assert.equal(scaled(pct("30%"), 4, false), 1);
  });

  it("a pod of an unknown controller fails the computation; pods without one are reported", () => {
    assert.throws(() => computeStatus(pdb({ maxUnavailable: int(1) }), [pod("a", { owner: "gone" })], scales({}), NOW), SyncError);
    const c = computeStatus(pdb({ maxUnavailable: int(1) }), [pod("a", { owner: "rc" }), pod("lone")], scales({ rc: 1 }), NOW);
    assert.deepEqual(c.unmanaged, ["lone"]);
    assert.deepEqual(computeStatus(pdb({ minAvailable: int(1) }), [pod("lone")], scales({}), NOW).unmanaged, []);
  });

  it("disruptedPods: kept (not healthy) until deleted or timed out, with the recheck time", () => {
    const recent = iso(NOW - 10_000);
    const old = iso(NOW - DELETION_TIMEOUT_MS - 1000);
    const budget = pdb({ minAvailable: int(1) }, { disruptedPods: { a: recent, b: old, c: recent, gone: recent } });
    const pods = [pod("a"), pod("b"), pod("c", { deleting: true }), pod("d")];
    const c = computeStatus(budget, pods, scales({}), NOW);
    assert.deepEqual(c.status.disruptedPods, { a: recent });
    assert.equal(c.recheckAt, NOW - 10_000 + DELETION_TIMEOUT_MS);
    assert.deepEqual(
      c.notDeleted.map((p) => p.metadata?.name),
      ["b"],
    );
    // b (timed out) and d are healthy; a was just evicted, c is being deleted.
    assert.equal(c.status.currentHealthy, 2);
    assert.equal(c.status.disruptionsAllowed, 1);
  });

  it("no expected pod or too few healthy → 0 allowed, InsufficientPods; the transition time moves only on a change", () => {
    const before = iso(NOW - 60_000);
    const budget = pdb(
      { minAvailable: int(3) },
      {
        conditions: [
          { type: "DisruptionAllowed", status: "False", reason: "InsufficientPods", observedGeneration: 1, lastTransitionTime: before, message: "" },
        ],
      },
    );
    const s = computeStatus(budget, [pod("a"), pod("b")], scales({}), NOW).status;
    assert.equal(s.disruptionsAllowed, 0);
    assert.equal(s.conditions[0]?.lastTransitionTime, before);
    assert.equal(computeStatus(pdb({ maxUnavailable: int(1) }), [], scales({}), NOW).status.disruptionsAllowed, 0);
  });

  it("fail-safe: no disruption, SyncFailed, the observed generation kept", () => {
    const s = failSafeStatus(pdb({ maxUnavailable: int(1) }, { disruptionsAllowed: 2, observedGeneration: 1 }, 2), NOW);
    assert.equal(s.disruptionsAllowed, 0);
    assert.equal(s.observedGeneration, 1);
    assert.equal(s.conditions.find((c) => c.type === "DisruptionAllowed")?.reason, "SyncFailed");
  });
});
