import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PodStatus } from "../gen/choreo/core/v1/core.js";
import { setPodCondition, withPodCondition } from "./pod-conditions.js";

const T0 = "2026-11-26T01:00:00Z";
const T1 = "2026-11-26T02:00:00Z";
const target = { type: "DisruptionTarget", status: "True", reason: "EvictionByEvictionAPI", message: "Eviction API: evicting" };

describe("setPodCondition (Kubernetes' UpdatePodCondition)", () => {
  it("appends a new type with the time given, keeping the others", () => {
    const s = PodStatus.fromPartial({ conditions: [{ type: "Ready", status: "True", lastTransitionTime: T0 }] });
    assert.equal(setPodCondition(s, target, T1), true);
    assert.deepEqual(
      s.conditions.map((c) => [c.type, c.status, c.reason, c.lastTransitionTime]),
      [
        ["Ready", "True", "", T0],
        ["DisruptionTarget", "True", "EvictionByEvictionAPI", T1],
      ],
    );
  });

  it("the same condition again changes nothing; a new reason keeps the transition time; a new status moves it", () => {
    const s = PodStatus.fromPartial({});
    setPodCondition(s, target, T0);
    assert.equal(setPodCondition(s, target, T1), false);
    assert.equal(s.conditions[0]?.lastTransitionTime, T0);
    assert.equal(setPodCondition(s, { ...target, reason: "PreemptionByScheduler" }, T1), true);
    assert.deepEqual([s.conditions[0]?.reason, s.conditions[0]?.lastTransitionTime], ["PreemptionByScheduler", T0]);
    assert.equal(setPodCondition(s, { ...target, status: "False" }, T1), true);
    assert.deepEqual([s.conditions.length, s.conditions[0]?.status, s.conditions[0]?.lastTransitionTime], [1, "False", T1]);
  });

  it("withPodCondition works on a copy and answers undefined when there is nothing to write", () => {
    const before = PodStatus.fromPartial({ phase: "Running" });
    const next = withPodCondition(before, target, T0);
    assert.equal(before.conditions.length, 0, "the status given is not changed");
    assert.equal(next?.conditions[0]?.type, "DisruptionTarget");
    assert.equal(next?.phase, "Running");
    assert.equal(withPodCondition(next, target, T1), undefined);
    assert.equal(withPodCondition(undefined, target, T0)?.conditions.length, 1);
  });
});
