// Init containers in the pod validation: what Kubernetes' validateInitContainers refuses (422 with the field path).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { defaultPodSpec } from "./pod-spec.js";
import { podStrategy } from "./strategy.js";

const pod = (init: Record<string, unknown>): Pod => {
  const p = unwrap(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", namespace: "default" },
      spec: { initContainers: [{ name: "setup", image: "busybox", command: ["true"], ...init }], containers: [{ name: "app", image: "busybox" }] },
    }),
  ) as Pod;
  defaultPodSpec(p.spec!); // as the registry does before validating
  return p;
};
const errors = (p: Pod): string[] => podStrategy.validate(p).map((c) => `${c.field}: ${c.message}`);
const FORBIDDEN = "Forbidden: may not be set for init containers without restartPolicy=Always";

describe("init containers in the pod spec", () => {
  it("a plain init container is valid", () => {
    assert.deepEqual(errors(pod({})), []);
  });

  it("probes and lifecycle hooks on an init container are refused with their field path, as Kubernetes does", () => {
    const probe = { exec: { command: ["true"] } };
    for (const field of ["livenessProbe", "readinessProbe", "startupProbe"]) {
      assert.deepEqual(errors(pod({ [field]: probe })), [`spec.initContainers[0].${field}: ${FORBIDDEN}`], field);
    }
    assert.deepEqual(errors(pod({ lifecycle: { postStart: { exec: { command: ["true"] } } } })), [`spec.initContainers[0].lifecycle: ${FORBIDDEN}`]);
  });

  it("an init container may not share a name with an app container", () => {
    assert.deepEqual(errors(pod({ name: "app" })), ['spec.containers[0].name: Duplicate value: "app"']);
  });
});
