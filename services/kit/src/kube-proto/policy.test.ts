// policy/v1 PodDisruptionBudget and Eviction on Kubernetes' protobuf wire:
// Kubernetes 1.32's field numbers (k8s.io/api policy/v1 generated.proto),
// checked byte by byte on a few fields, and full objects through the envelope
// and back (disruptedPods is a map of Time).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decodeMessage, decodeObject, encodeMessage, encodeObject, type KubeJson } from "./index.js";

const POLICY = "k8s.io.api.policy.v1";

const pdb: KubeJson = {
  apiVersion: "policy/v1",
  kind: "PodDisruptionBudget",
  metadata: { name: "web", namespace: "default", generation: 2, creationTimestamp: "2026-11-26T01:00:00Z" },
  spec: { minAvailable: "50%", selector: { matchLabels: { app: "web" } }, unhealthyPodEvictionPolicy: "AlwaysAllow" },
  status: {
    observedGeneration: 2,
    disruptedPods: { "web-1": "2026-11-26T01:02:00Z" },
    disruptionsAllowed: 1,
    currentHealthy: 3,
    desiredHealthy: 2,
    expectedPods: 4,
    conditions: [{ type: "DisruptionAllowed", status: "True", observedGeneration: 2, lastTransitionTime: "2026-11-26T01:01:00Z", reason: "SufficientPods" }],
  },
};

const eviction: KubeJson = {
  apiVersion: "policy/v1",
  kind: "Eviction",
  metadata: { name: "web-1", namespace: "default" },
  deleteOptions: { gracePeriodSeconds: 5, dryRun: ["All"] },
};

/** The bytes of a message holding one varint field. */
const varint = (field: number, v: number): number[] => [(field << 3) | 0, v];

describe("policy/v1 on the protobuf wire", () => {
  it("uses Kubernetes' field numbers", () => {
    // PodDisruptionBudgetStatus: observedGeneration 1, disruptionsAllowed 3, currentHealthy 4, desiredHealthy 5, expectedPods 6.
    assert.deepEqual(
      [
        ...encodeMessage(`${POLICY}.PodDisruptionBudgetStatus`, {
          observedGeneration: 1,
          disruptionsAllowed: 2,
          currentHealthy: 3,
          desiredHealthy: 4,
          expectedPods: 5,
        }),
      ],
      [...varint(1, 1), ...varint(3, 2), ...varint(4, 3), ...varint(5, 4), ...varint(6, 5)],
    );
    // PodDisruptionBudgetSpec: minAvailable 1, selector 2, maxUnavailable 3, unhealthyPodEvictionPolicy 4.
    assert.equal(encodeMessage(`${POLICY}.PodDisruptionBudgetSpec`, { maxUnavailable: 1 })[0], (3 << 3) | 2);
    assert.equal(encodeMessage(`${POLICY}.PodDisruptionBudgetSpec`, { unhealthyPodEvictionPolicy: "AlwaysAllow" })[0], (4 << 3) | 2);
    assert.deepEqual(decodeMessage(`${POLICY}.PodDisruptionBudgetSpec`, encodeMessage(`${POLICY}.PodDisruptionBudgetSpec`, { minAvailable: 3 })), {
      minAvailable: 3,
    });
    // Eviction: metadata 1, deleteOptions 2.
    assert.equal(encodeMessage(`${POLICY}.Eviction`, { deleteOptions: {} })[0], (2 << 3) | 2);
  });

  for (const obj of [pdb, eviction]) {
    it(`a ${String(obj["kind"])} goes through the envelope and back unchanged`, () => {
      assert.deepEqual(decodeObject(encodeObject(obj)), obj);
    });
  }
});
