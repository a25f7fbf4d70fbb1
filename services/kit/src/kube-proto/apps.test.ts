// ReplicaSet and Deployment on Kubernetes' protobuf wire: Kubernetes 1.32's
// field numbers (k8s.io/api apps/v1 generated.proto), checked byte by byte on
// a few fields, and a full object through the envelope and back.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decodeMessage, decodeObject, encodeMessage, encodeObject, type KubeJson } from "./index.js";

const APPS = "k8s.io.api.apps.v1";

const template = {
  metadata: { labels: { app: "web" } },
  spec: { containers: [{ name: "nginx", image: "nginx:1.27", ports: [{ containerPort: 80, protocol: "TCP" }] }], restartPolicy: "Always" },
};

const deployment: KubeJson = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web", namespace: "default", generation: 3, creationTimestamp: "2026-11-25T22:00:00Z" },
  spec: {
    replicas: 3,
    selector: { matchLabels: { app: "web" }, matchExpressions: [{ key: "tier", operator: "In", values: ["a", "b"] }] },
    template,
    strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: "50%" } },
    minReadySeconds: 5,
    revisionHistoryLimit: 10,
    paused: true,
    progressDeadlineSeconds: 600,
  },
  status: {
    observedGeneration: 3,
    replicas: 3,
    updatedReplicas: 2,
    readyReplicas: 2,
    availableReplicas: 1,
    unavailableReplicas: 2,
    conditions: [
      {
        type: "Progressing",
        status: "True",
        lastUpdateTime: "2026-11-25T22:01:00Z",
        lastTransitionTime: "2026-11-25T22:00:30Z",
        reason: "NewReplicaSetAvailable",
        message: 'ReplicaSet "web-5d4f" has successfully progressed.',
      },
    ],
    collisionCount: 1,
  },
};

const replicaSet: KubeJson = {
  apiVersion: "apps/v1",
  kind: "ReplicaSet",
  metadata: { name: "web-5d4f", namespace: "default" },
  spec: { replicas: 0, minReadySeconds: 2, selector: { matchLabels: { app: "web" } }, template },
  status: {
    replicas: 2,
    fullyLabeledReplicas: 2,
    readyReplicas: 1,
    availableReplicas: 1,
    observedGeneration: 4,
    conditions: [{ type: "ReplicaFailure", status: "True", lastTransitionTime: "2026-11-25T22:00:00Z", reason: "FailedCreate", message: "quota" }],
  },
};

/** The bytes of a message holding one varint field. */
const varint = (field: number, v: number): number[] => [(field << 3) | 0, v];

describe("apps/v1 on the protobuf wire", () => {
  it("uses Kubernetes' field numbers", () => {
    // DeploymentSpec: replicas 1, minReadySeconds 5, revisionHistoryLimit 6, paused 7, progressDeadlineSeconds 9.
    assert.deepEqual(
      [...encodeMessage(`${APPS}.DeploymentSpec`, { replicas: 2, minReadySeconds: 3, revisionHistoryLimit: 4, paused: true, progressDeadlineSeconds: 60 })],
      [...varint(1, 2), ...varint(5, 3), ...varint(6, 4), ...varint(7, 1), ...varint(9, 60)],
    );
    // ReplicaSetSpec: replicas 1, minReadySeconds 4.
    assert.deepEqual([...encodeMessage(`${APPS}.ReplicaSetSpec`, { replicas: 1, minReadySeconds: 7 })], [...varint(1, 1), ...varint(4, 7)]);
    // DeploymentStatus: readyReplicas 7, availableReplicas 4, collisionCount 8; ReplicaSetStatus: readyReplicas 4, observedGeneration 3.
    assert.deepEqual(
      [...encodeMessage(`${APPS}.DeploymentStatus`, { availableReplicas: 1, readyReplicas: 2, collisionCount: 3 })],
      [...varint(4, 1), ...varint(7, 2), ...varint(8, 3)],
    );
    assert.deepEqual([...encodeMessage(`${APPS}.ReplicaSetStatus`, { observedGeneration: 9, readyReplicas: 2 })], [...varint(3, 9), ...varint(4, 2)]);
    // RollingUpdateDeployment: maxUnavailable 1, maxSurge 2; DeploymentCondition lastUpdateTime 6.
    const ru = decodeMessage(`${APPS}.RollingUpdateDeployment`, encodeMessage(`${APPS}.RollingUpdateDeployment`, { maxSurge: "25%" }));
    assert.deepEqual(ru, { maxSurge: "25%" });
    assert.equal(encodeMessage(`${APPS}.RollingUpdateDeployment`, { maxSurge: 1 })[0], (2 << 3) | 2);
    assert.equal(encodeMessage(`${APPS}.DeploymentCondition`, { lastUpdateTime: "2026-11-25T22:01:00Z" })[0], (6 << 3) | 2);
  });

  for (const obj of [deployment, replicaSet]) {
    it(`a ${String(obj["kind"])} goes through the envelope and back unchanged`, () => {
      assert.deepEqual(decodeObject(encodeObject(obj)), obj);
    });
  }
});
