import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { rolloutStatus } from "./rollout-status.js";

const deploy = (generation: number, spec: Record<string, unknown>, status: Record<string, unknown>) => ({
  kind: "Deployment",
  metadata: { name: "web", generation },
  spec,
  status: { observedGeneration: 1, ...status },
});

describe("rollout status viewers (kubectl's words)", () => {
  it("a Deployment: spec not observed, new replicas, old ones terminating, availability, done, deadline exceeded", () => {
    assert.deepEqual(rolloutStatus(deploy(2, { replicas: 3 }, {})), { message: "Waiting for deployment spec update to be observed...", done: false });
    assert.equal(
      rolloutStatus(deploy(1, { replicas: 3 }, { updatedReplicas: 1 })).message,
      'Waiting for deployment "web" rollout to finish: 1 out of 3 new replicas have been updated...',
    );
    assert.equal(
      rolloutStatus(deploy(1, { replicas: 3 }, { updatedReplicas: 3, replicas: 5 })).message,
      'Waiting for deployment "web" rollout to finish: 2 old replicas are pending termination...',
    );
    assert.equal(
      rolloutStatus(deploy(1, { replicas: 3 }, { updatedReplicas: 3, replicas: 3, availableReplicas: 2 })).message,
      'Waiting for deployment "web" rollout to finish: 2 of 3 updated replicas are available...',
    );
    assert.deepEqual(rolloutStatus(deploy(1, { replicas: 3 }, { updatedReplicas: 3, replicas: 3, availableReplicas: 3 })), {
      message: 'deployment "web" successfully rolled out',
      done: true,
    });
    assert.throws(
      () => rolloutStatus(deploy(1, { replicas: 3 }, { conditions: [{ type: "Progressing", reason: "ProgressDeadlineExceeded" }] })),
      /deployment "web" exceeded its progress deadline/,
    );
  });

  it("a DaemonSet (RollingUpdate only), a StatefulSet, and kinds without a viewer", () => {
    const ds = (status: Record<string, unknown>, type = "RollingUpdate") => ({
      kind: "DaemonSet",
      metadata: { name: "agent", generation: 1 },
      spec: { updateStrategy: { type } },
      status: { observedGeneration: 1, desiredNumberScheduled: 2, ...status },
    });
    assert.equal(
      rolloutStatus(ds({ updatedNumberScheduled: 1 })).message,
      'Waiting for daemon set "agent" rollout to finish: 1 out of 2 new pods have been updated...',
    );
    assert.equal(
      rolloutStatus(ds({ updatedNumberScheduled: 2, numberAvailable: 1 })).message,
      'Waiting for daemon set "agent" rollout to finish: 1 of 2 updated pods are available...',
    );
    assert.deepEqual(rolloutStatus(ds({ updatedNumberScheduled: 2, numberAvailable: 2 })), {
      message: 'daemon set "agent" successfully rolled out',
      done: true,
    });
    assert.throws(() => rolloutStatus(ds({}, "OnDelete")), /only available for RollingUpdate strategy type/);
    const sts = { kind: "StatefulSet", metadata: { name: "db", generation: 1 }, spec: { replicas: 2 }, status: { observedGeneration: 1, readyReplicas: 1 } };
    assert.equal(rolloutStatus(sts).message, "Waiting for 1 pods to be ready...");
    assert.throws(() => rolloutStatus({ kind: "ReplicationController" }), /no status viewer has been implemented for ReplicationController/);
  });
});
