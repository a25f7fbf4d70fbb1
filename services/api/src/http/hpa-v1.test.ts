// autoscaling/v1 ⇄ autoscaling/v2 HorizontalPodAutoscaler, as Kubernetes converts what v1 holds.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { hpaV1ToV2, hpaV2ToV1, isHpaV1Path } from "./hpa-v1.js";

const ref = { kind: "Deployment", name: "web", apiVersion: "apps/v1" };

describe("autoscaling/v1 HorizontalPodAutoscaler", () => {
  it("targetCPUUtilizationPercentage is the Resource cpu Utilization metric", () => {
    const v2 = hpaV1ToV2({
      apiVersion: "autoscaling/v1",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "web" },
      spec: { scaleTargetRef: ref, minReplicas: 1, maxReplicas: 5, targetCPUUtilizationPercentage: 50 },
    });
    assert.deepEqual(v2, {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "web" },
      spec: {
        scaleTargetRef: ref,
        minReplicas: 1,
        maxReplicas: 5,
        metrics: [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } } }],
      },
    });
    // Without a target no metric is given (the v2 default, 80 % CPU, applies).
    assert.equal((hpaV1ToV2({ spec: { scaleTargetRef: ref, maxReplicas: 2 } })["spec"] as Record<string, unknown>)["metrics"], undefined);
  });

  it("back to v1: the target and the current utilization of the cpu metric", () => {
    const v1 = hpaV2ToV1({
      metadata: { name: "web" },
      spec: {
        scaleTargetRef: ref,
        minReplicas: 2,
        maxReplicas: 5,
        metrics: [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 60 } } }],
      },
      status: {
        currentReplicas: 3,
        desiredReplicas: 4,
        lastScaleTime: "2026-11-26T01:00:00Z",
        currentMetrics: [{ type: "Resource", resource: { name: "cpu", current: { averageUtilization: 90, averageValue: "90m" } } }],
      },
    });
    assert.deepEqual(v1, {
      kind: "HorizontalPodAutoscaler",
      apiVersion: "autoscaling/v1",
      metadata: { name: "web" },
      spec: { scaleTargetRef: ref, minReplicas: 2, maxReplicas: 5, targetCPUUtilizationPercentage: 60 },
      status: { lastScaleTime: "2026-11-26T01:00:00Z", currentReplicas: 3, desiredReplicas: 4, currentCPUUtilizationPercentage: 90 },
    });
  });

  it("claims only autoscaling/v1 HPA paths", () => {
    assert.ok(isHpaV1Path("/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"));
    assert.ok(isHpaV1Path("/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web"));
    assert.ok(!isHpaV1Path("/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"));
    assert.ok(!isHpaV1Path("/apis/apps/v1/namespaces/default/deployments/web/scale"));
  });
});
