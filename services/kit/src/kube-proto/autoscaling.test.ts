// HorizontalPodAutoscaler on Kubernetes' protobuf wire: Kubernetes 1.32's
// field numbers (k8s.io/api autoscaling/v2 and v1 generated.proto), checked
// byte by byte on a few fields, and full objects through the envelope and back.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decodeObject, encodeMessage, encodeObject, type KubeJson } from "./index.js";

const V2 = "k8s.io.api.autoscaling.v2";
const ref = { kind: "Deployment", name: "web", apiVersion: "apps/v1" };

const v2: KubeJson = {
  apiVersion: "autoscaling/v2",
  kind: "HorizontalPodAutoscaler",
  metadata: { name: "web", namespace: "default", generation: 2, creationTimestamp: "2026-11-26T01:00:00Z" },
  spec: {
    scaleTargetRef: ref,
    minReplicas: 1,
    maxReplicas: 5,
    metrics: [
      { type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } } },
      { type: "ContainerResource", containerResource: { name: "memory", container: "app", target: { type: "AverageValue", averageValue: "100Mi" } } },
      { type: "Pods", pods: { metric: { name: "qps", selector: { matchLabels: { a: "b" } } }, target: { type: "AverageValue", averageValue: "10" } } },
      { type: "External", external: { metric: { name: "queue" }, target: { type: "Value", value: "30" } } },
    ],
    behavior: {
      scaleUp: { stabilizationWindowSeconds: 0, selectPolicy: "Max", policies: [{ type: "Pods", value: 4, periodSeconds: 15 }] },
      scaleDown: { stabilizationWindowSeconds: 300, selectPolicy: "Min", policies: [{ type: "Percent", value: 100, periodSeconds: 15 }] },
    },
  },
  status: {
    observedGeneration: 2,
    lastScaleTime: "2026-11-26T01:05:00Z",
    currentReplicas: 3,
    desiredReplicas: 4,
    currentMetrics: [{ type: "Resource", resource: { name: "cpu", current: { averageUtilization: 87, averageValue: "87m" } } }],
    conditions: [
      {
        type: "AbleToScale",
        status: "True",
        lastTransitionTime: "2026-11-26T01:05:00Z",
        reason: "SucceededRescale",
        message: "the HPA controller was able to update the target scale to 4",
      },
    ],
  },
};

const v1: KubeJson = {
  apiVersion: "autoscaling/v1",
  kind: "HorizontalPodAutoscaler",
  metadata: { name: "web", namespace: "default" },
  spec: { scaleTargetRef: ref, minReplicas: 1, maxReplicas: 5, targetCPUUtilizationPercentage: 50 },
  status: { currentReplicas: 2, desiredReplicas: 2, currentCPUUtilizationPercentage: 40 },
};

const varint = (field: number, v: number): number[] => [(field << 3) | 0, v];

describe("autoscaling on the protobuf wire", () => {
  it("uses Kubernetes' field numbers", () => {
    // HorizontalPodAutoscalerSpec: minReplicas 2, maxReplicas 3; HPAScalingRules: stabilizationWindowSeconds 3 (after selectPolicy 1, policies 2).
    assert.deepEqual([...encodeMessage(`${V2}.HorizontalPodAutoscalerSpec`, { minReplicas: 1, maxReplicas: 5 })], [...varint(2, 1), ...varint(3, 5)]);
    assert.deepEqual([...encodeMessage(`${V2}.HPAScalingRules`, { stabilizationWindowSeconds: 60 })], varint(3, 60));
    // MetricSpec: containerResource 7, external 5; MetricTarget averageUtilization 4; status desiredReplicas 4.
    assert.equal(encodeMessage(`${V2}.MetricSpec`, { containerResource: { name: "cpu" } })[0], (7 << 3) | 2);
    assert.equal(encodeMessage(`${V2}.MetricSpec`, { external: {} })[0], (5 << 3) | 2);
    assert.deepEqual([...encodeMessage(`${V2}.MetricTarget`, { averageUtilization: 50 })], varint(4, 50));
    assert.deepEqual([...encodeMessage(`${V2}.HorizontalPodAutoscalerStatus`, { desiredReplicas: 4 })], varint(4, 4));
    assert.deepEqual([...encodeMessage("k8s.io.api.autoscaling.v1.HorizontalPodAutoscalerSpec", { targetCPUUtilizationPercentage: 50 })], varint(4, 50));
  });

  for (const obj of [v2, v1]) {
    it(`an ${String(obj["apiVersion"])} HorizontalPodAutoscaler goes through the envelope and back unchanged`, () => {
      assert.deepEqual(decodeObject(encodeObject(obj)), obj);
    });
  }
});
