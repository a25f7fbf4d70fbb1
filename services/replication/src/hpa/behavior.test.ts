// Stabilization and scaling policies against cases of Kubernetes'
// horizontal_test.go (TestConvertDesiredReplicasWithRules,
// TestNormalizeDesiredReplicasWithBehavior, TestScalingWithRules,
// TestStoreScaleEvents).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HPAScalingRules, HorizontalPodAutoscalerBehavior } from "@choreo/kit/gen/choreo/autoscaling/v2/autoscaling";
import {
  convertDesiredReplicasWithRules,
  emptyHistory,
  normalizeWithBehavior,
  normalizeWithoutBehavior,
  scaleDownLimit,
  scaleUpLimit,
  storeScaleEvent,
  type HpaHistory,
} from "./behavior.js";

const NOW = Date.parse("2026-11-26T01:00:00Z");
const s = (seconds: number): number => NOW - seconds * 1000;

const upDefaults = (): HPAScalingRules => ({
  stabilizationWindowSeconds: 0,
  selectPolicy: "Max",
  policies: [
    { type: "Pods", value: 4, periodSeconds: 15 },
    { type: "Percent", value: 100, periodSeconds: 15 },
  ],
});
const downDefaults = (window?: number): HPAScalingRules => ({
  stabilizationWindowSeconds: window,
  selectPolicy: "Max",
  policies: [{ type: "Percent", value: 100, periodSeconds: 15 }],
});
const behavior = (up: Partial<HPAScalingRules> = {}, down: Partial<HPAScalingRules> = {}): HorizontalPodAutoscalerBehavior => ({
  scaleUp: { ...upDefaults(), ...up },
  scaleDown: { ...downDefaults(), ...down },
});

describe("without behavior (Kubernetes' classic rules)", () => {
  it("clamps to min and max and limits a scale-up to max(2 × current, 4)", () => {
    assert.deepEqual(convertDesiredReplicasWithRules(5, 7, 3, 8), {
      replicas: 7,
      reason: "DesiredWithinRange",
      message: "the desired count is within the acceptable range",
    });
    assert.equal(convertDesiredReplicasWithRules(5, 20, 1, 20).replicas, 10);
    assert.equal(convertDesiredReplicasWithRules(5, 20, 1, 20).reason, "ScaleUpLimit");
    assert.equal(convertDesiredReplicasWithRules(1, 10, 1, 20).replicas, 4);
    assert.deepEqual([convertDesiredReplicasWithRules(5, 12, 1, 8).replicas, convertDesiredReplicasWithRules(5, 12, 1, 8).reason], [8, "TooManyReplicas"]);
    assert.deepEqual([convertDesiredReplicasWithRules(5, 1, 3, 8).replicas, convertDesiredReplicasWithRules(5, 1, 3, 8).reason], [3, "TooFewReplicas"]);
  });

  it("keeps the highest recommendation of the last 300 s on a scale-down (ScaleDownStabilized)", () => {
    const h: HpaHistory = {
      recommendations: [
        { replicas: 6, at: s(200) },
        { replicas: 9, at: s(400) },
      ],
      scaleUp: [],
      scaleDown: [],
    };
    const n = normalizeWithoutBehavior(h, 6, 2, 1, 10, NOW);
    assert.equal(n.replicas, 6);
    assert.equal(n.ableToScale.reason, "ScaleDownStabilized");
    // The 400 s old sample's slot holds the new recommendation.
    assert.deepEqual(h.recommendations, [
      { replicas: 6, at: s(200) },
      { replicas: 2, at: NOW },
    ]);
    const later = normalizeWithoutBehavior(h, 6, 2, 1, 10, NOW + 201_000);
    assert.deepEqual([later.replicas, later.ableToScale.reason, later.limited.status], [2, "ReadyForNewScale", "False"]);
  });
});

describe("with behavior (stabilization windows, scaling policies)", () => {
  it("scales up at once with the default rules (no up window), to the larger of 4 pods and 100 % per 15 s", () => {
    const h = emptyHistory();
    const n = normalizeWithBehavior(h, behavior(), 2, 10, 1, 20, NOW);
    // Pods: 2 + 4 = 6; Percent: 2 × 2 = 4; Max → 6.
    assert.deepEqual([n.replicas, n.limited.status, n.limited.reason], [6, "True", "ScaleUpLimit"]);
    assert.equal(n.ableToScale.reason, "ReadyForNewScale");
  });

  it("selectPolicy Min takes the smaller change; Disabled none", () => {
    assert.equal(scaleUpLimit(10, [], { ...upDefaults(), selectPolicy: "Min" }, NOW), 14);
    assert.equal(scaleUpLimit(10, [], upDefaults(), NOW), 20);
    assert.equal(scaleUpLimit(10, [], { ...upDefaults(), selectPolicy: "Disabled" }, NOW), 10);
    const down: HPAScalingRules = {
      selectPolicy: "Max",
      policies: [
        { type: "Pods", value: 4, periodSeconds: 60 },
        { type: "Percent", value: 50, periodSeconds: 60 },
      ],
    };
    assert.equal(scaleDownLimit(10, [], down, NOW), 5);
    assert.equal(scaleDownLimit(10, [], { ...down, selectPolicy: "Min" }, NOW), 6);
    assert.equal(scaleDownLimit(10, [], { ...down, selectPolicy: "Disabled" }, NOW), 10);
  });

  it("counts the scale events of each policy's period (TestScalingWithRules: 10 added in the last 15 s of 20 → no more)", () => {
    const events = [{ change: 10, at: s(10), outdated: false }];
    assert.equal(scaleUpLimit(20, events, upDefaults(), NOW), 20);
    // Once the event is older than the period, doubling is allowed again.
    assert.equal(scaleUpLimit(20, events, upDefaults(), NOW + 6_000), 40);
    const h: HpaHistory = { recommendations: [], scaleUp: events, scaleDown: [] };
    const n = normalizeWithBehavior(h, behavior(), 20, 30, 1, 50, NOW);
    assert.deepEqual([n.replicas, n.limited.reason], [20, "ScaleUpLimit"]);
    // Scale-down: 4 pods per 60 s, 3 removed 30 s ago from 10 → 7 now: at most 1 more.
    assert.equal(
      scaleDownLimit(7, [{ change: 3, at: s(30), outdated: false }], { selectPolicy: "Max", policies: [{ type: "Pods", value: 4, periodSeconds: 60 }] }, NOW),
      6,
    );
  });

  it("holds a scale-down for the down window: the highest recommendation in it (ScaleDownStabilized), then goes", () => {
    const b = behavior({}, { stabilizationWindowSeconds: 30 });
    const h = emptyHistory();
    assert.equal(normalizeWithBehavior(h, b, 5, 5, 1, 10, NOW).replicas, 5);
    const held = normalizeWithBehavior(h, b, 5, 1, 1, 10, NOW + 15_000);
    assert.deepEqual([held.replicas, held.ableToScale.reason], [5, "ScaleDownStabilized"]);
    const gone = normalizeWithBehavior(h, b, 5, 1, 1, 10, NOW + 31_000);
    assert.deepEqual([gone.replicas, gone.ableToScale.reason, gone.limited.reason], [1, "ReadyForNewScale", "DesiredWithinRange"]);
  });

  it("holds a scale-up for the up window: the lowest recommendation in it (ScaleUpStabilized)", () => {
    const b = behavior({ stabilizationWindowSeconds: 60 });
    const h: HpaHistory = { recommendations: [{ replicas: 4, at: s(30) }], scaleUp: [], scaleDown: [] };
    const n = normalizeWithBehavior(h, b, 3, 8, 1, 10, NOW);
    assert.deepEqual([n.replicas, n.ableToScale.reason], [4, "ScaleUpStabilized"]);
  });

  it("keeps within min and max: TooFewReplicas, TooManyReplicas", () => {
    const h = emptyHistory();
    const few = normalizeWithBehavior(h, behavior({}, { stabilizationWindowSeconds: 0 }), 5, 1, 2, 10, NOW);
    assert.deepEqual([few.replicas, few.limited.status, few.limited.reason], [2, "True", "TooFewReplicas"]);
    const many = normalizeWithBehavior(emptyHistory(), behavior(), 5, 40, 1, 7, NOW);
    assert.deepEqual([many.replicas, many.limited.reason], [7, "TooManyReplicas"]);
  });

  it("stores scale events by direction, reusing the slot of one older than the longest period (TestStoreScaleEvents)", () => {
    const h = emptyHistory();
    const b = behavior();
    storeScaleEvent(h, b, 2, 6, s(100));
    storeScaleEvent(h, b, 6, 8, s(5));
    storeScaleEvent(h, b, 8, 3, s(1));
    assert.equal(h.scaleDown.length, 1);
    assert.deepEqual(h.scaleDown[0], { change: 5, at: s(1), outdated: false });
    // The first up event (100 s old, longer than 15 s) was outdated and its slot reused.
    assert.deepEqual(h.scaleUp, [{ change: 2, at: s(5), outdated: false }]);
    storeScaleEvent(h, undefined, 3, 9, NOW);
    assert.equal(h.scaleUp.length, 1, "without behavior nothing is stored");
  });
});
