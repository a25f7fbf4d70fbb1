import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ContainerStatus } from "@choreo/kit/gen/choreo/core/v1/core";
import { planRestarts, restartDelayMs, shouldRestart } from "./restart-policy.js";

const exited = (name: string, exitCode: number, restartCount: number, finishedAt: string): ContainerStatus => ({
  name,
  ready: false,
  restartCount,
  image: "i",
  imageId: "",
  allocatedResources: {},
  volumeMounts: [],
  allocatedResourcesStatus: [],
  containerId: "",
  started: false,
  lastState: undefined,
  state: { terminated: { exitCode, signal: 0, reason: "", message: "", startedAt: "", finishedAt, containerId: "" } },
});

describe("restart policy", () => {
  it("restarts per policy: Always always, OnFailure on a non-zero exit, Never never", () => {
    assert.equal(shouldRestart("Always", 0), true);
    assert.equal(shouldRestart("", 1), true);
    assert.equal(shouldRestart("OnFailure", 0), false);
    assert.equal(shouldRestart("OnFailure", 2), true);
    assert.equal(shouldRestart("Never", 1), false);
  });

  it("backs off: the first restart at once, then initial doubling up to max", () => {
    const b = { initialMs: 10_000, maxMs: 300_000 };
    assert.deepEqual(
      [0, 1, 2, 3, 6, 50].map((n) => restartDelayMs(n, b)),
      [0, 10_000, 20_000, 40_000, 300_000, 300_000],
    );
  });

  it("plans restarts that are due and a recheck for those backing off", () => {
    const b = { initialMs: 10_000, maxMs: 300_000 };
    const now = Date.parse("2025-01-01T00:01:00Z");
    const plan = planRestarts(
      "Always",
      [exited("due", 1, 0, "2025-01-01T00:00:59Z"), exited("waits", 1, 2, "2025-01-01T00:00:50Z"), exited("ok", 0, 0, "x")],
      now,
      b,
    );
    assert.deepEqual(plan.restartNow, ["due", "ok"]);
    assert.deepEqual([...plan.backingOff], ["waits"]);
    assert.equal(plan.recheckMs, 10_000);
    assert.deepEqual(planRestarts("Never", [exited("a", 1, 0, "")], now, b).restartNow, []);
    assert.deepEqual(planRestarts("OnFailure", [exited("a", 0, 0, ""), exited("b", 1, 0, "")], now, b).restartNow, ["b"]);
  });
});
