// The replica calculator against cases of Kubernetes' replica_calculator_test.go
// (the same pods, requests, usages and targets; the same expected replicas
// and utilization).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CalcError, rawResourceReplicas, resourceReplicas, type CalcPod, type PodSample } from "./replica-calculator.js";

const NOW = Date.parse("2026-11-26T01:00:00Z");
const LONG_AGO = NOW - 60 * 60_000;

/** A running pod ready for an hour, requesting `milli` of cpu in one container. */
function pod(name: string, milli: number, over: Partial<CalcPod> = {}): CalcPod {
  return {
    name,
    phase: "Running",
    deleting: false,
    ready: { status: "True", lastTransitionMs: LONG_AGO },
    startMs: LONG_AGO,
    requests: [{ container: "c", milli }],
    ...over,
  };
}

function samples(usage: Record<string, number>): Map<string, PodSample> {
  return new Map(Object.entries(usage).map(([name, milli]) => [name, { milli, timestampMs: NOW - 5_000, windowMs: 30_000 }]));
}

describe("resourceReplicas (Kubernetes' GetResourceReplicas)", () => {
  it("scales up by the ratio of utilization to the target (TestReplicaCalcScaleUp: 3 pods at 50 % of a 30 % target → 5)", () => {
    const r = resourceReplicas(3, 30, "cpu", [pod("p0", 1000), pod("p1", 1000), pod("p2", 1000)], samples({ p0: 300, p1: 500, p2: 700 }), NOW);
    assert.deepEqual(r, { replicas: 5, utilization: 50, rawAverageMilli: 500 });
  });

  it("scales down (TestReplicaCalcScaleDown: 5 pods at 28 % of a 50 % target → 3)", () => {
    const pods = ["p0", "p1", "p2", "p3", "p4"].map((n) => pod(n, 1000));
    const r = resourceReplicas(5, 50, "cpu", pods, samples({ p0: 100, p1: 300, p2: 500, p3: 250, p4: 250 }), NOW);
    assert.equal(r.replicas, 3);
    assert.equal(r.utilization, 28);
  });

  it("keeps the replicas within the 0.1 tolerance (TestReplicaCalcTolerance: 106 % of 100 %)", () => {
    const r = resourceReplicas(3, 100, "cpu", [pod("p0", 900), pod("p1", 1000), pod("p2", 1100)], samples({ p0: 1010, p1: 1090, p2: 1100 }), NOW);
    assert.deepEqual([r.replicas, r.utilization], [3, 106]);
    // Just outside it: 111 % of 100 % → ceil(1.11 × 3) = 4.
    const out = resourceReplicas(3, 100, "cpu", [pod("p0", 1000), pod("p1", 1000), pod("p2", 1000)], samples({ p0: 1110, p1: 1110, p2: 1110 }), NOW);
    assert.equal(out.replicas, 4);
  });

  it("counts an unready pod as using nothing on a scale-up (TestReplicaCalcScaleUpUnreadyLessScale → 4, not 6)", () => {
    const pods = [pod("p0", 1000, { ready: { status: "False", lastTransitionMs: LONG_AGO }, startMs: NOW - 60_000 }), pod("p1", 1000), pod("p2", 1000)];
    const r = resourceReplicas(3, 30, "cpu", pods, samples({ p0: 300, p1: 500, p2: 700 }), NOW);
    assert.deepEqual([r.replicas, r.utilization], [4, 60]);
  });

  it("ignores a Pending pod's sample and a deleted or Failed pod altogether", () => {
    const pods = [pod("p0", 1000, { phase: "Pending" }), pod("p1", 1000, { deleting: true }), pod("p2", 1000, { phase: "Failed" }), pod("p3", 1000)];
    // Only p3 counts: 500 of 1000 = 50 % of a 50 % target, no change.
    const r = resourceReplicas(4, 50, "cpu", pods, samples({ p0: 5000, p1: 5000, p2: 5000, p3: 500 }), NOW);
    assert.deepEqual([r.replicas, r.utilization], [4, 50]);
  });

  it("counts a pod without a sample as using its request on a scale-down: no change (TestReplicaCalcMissingMetricsNoChangeLt)", () => {
    const r = resourceReplicas(2, 100, "cpu", [pod("p0", 1000), pod("p1", 1000)], samples({ p0: 400 }), NOW);
    assert.deepEqual([r.replicas, r.utilization], [2, 40]);
    // Four pods, one sample at 10 %: the missing three at 100 % make 77.5 %, ceil(0.775 × 4) = 4 → no scale-down.
    const four = resourceReplicas(
      4,
      100,
      "cpu",
      ["p0", "p1", "p2", "p3"].map((n) => pod(n, 1000)),
      samples({ p0: 100 }),
      NOW,
    );
    assert.equal(four.replicas, 4);
  });

  it("counts a pod without a sample as using nothing on a scale-up (TestReplicaCalcMissingMetricsNoChangeGt and a scale-up)", () => {
    // 190 % with the missing pod at 0 → 95 %: the direction turns, no change.
    const flat = resourceReplicas(2, 100, "cpu", [pod("p0", 1000), pod("p1", 1000)], samples({ p0: 1900 }), NOW);
    assert.deepEqual([flat.replicas, flat.utilization], [2, 190]);
    // Two pods at 300 %, one missing: (3000 + 3000 + 0) / 3000 = 200 % → 6.
    const up = resourceReplicas(3, 100, "cpu", [pod("p0", 1000), pod("p1", 1000), pod("p2", 1000)], samples({ p0: 3000, p1: 3000 }), NOW);
    assert.equal(up.replicas, 6);
  });

  it("holds a pod within its CPU initialization period whose sample predates a full window since it became ready", () => {
    const fresh = pod("p0", 1000, { startMs: NOW - 60_000, ready: { status: "True", lastTransitionMs: NOW - 10_000 } });
    // Its 2000m sample is ignored as unready; p1 alone is at 50 % of 50 %, and a scale-up with unready pods is not the case.
    const r = resourceReplicas(2, 50, "cpu", [fresh, pod("p1", 1000)], samples({ p0: 2000, p1: 500 }), NOW);
    assert.deepEqual([r.replicas, r.utilization], [2, 50]);
  });

  it("refuses without requests, pods or samples, with Kubernetes' messages", () => {
    assert.throws(
      () => resourceReplicas(1, 50, "cpu", [pod("p0", 0)], samples({ p0: 100 }), NOW),
      (e: unknown) => e instanceof CalcError && e.message === "missing request for cpu in container c of Pod p0",
    );
    assert.throws(() => resourceReplicas(1, 50, "cpu", [], samples({}), NOW), /no pods returned by selector while calculating replica count/);
    assert.throws(() => resourceReplicas(1, 50, "cpu", [pod("p0", 1000)], samples({}), NOW), /did not receive metrics for targeted pods/);
  });
});

describe("rawResourceReplicas (Kubernetes' GetRawResourceReplicas)", () => {
  it("scales by the average usage per pod over the target value", () => {
    // 500m average of a 250m target → ceil(2 × 3) = 6.
    const r = rawResourceReplicas(3, 250, "cpu", [pod("p0", 1000), pod("p1", 1000), pod("p2", 1000)], samples({ p0: 400, p1: 500, p2: 600 }), NOW);
    assert.deepEqual([r.replicas, r.rawAverageMilli], [6, 500]);
    const same = rawResourceReplicas(3, 480, "cpu", [pod("p0", 1000), pod("p1", 1000), pod("p2", 1000)], samples({ p0: 400, p1: 500, p2: 600 }), NOW);
    assert.equal(same.replicas, 3);
  });
});
