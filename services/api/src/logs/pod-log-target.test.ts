// The container a pod's log (or attach) names: app, init and ephemeral containers, with the kube-apiserver's 400s.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { rejects } from "../testing/api-assert.js";
import { resolvePodLogTarget } from "./pod-log-target.js";

const handlers = (containers: string[], ephemeral: string[]) => ({
  get: () =>
    Promise.resolve(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "p", namespace: "default", uid: "u1" },
        spec: {
          nodeName: "n1",
          containers: containers.map((name) => ({ name, image: "busybox" })),
          ephemeralContainers: ephemeral.map((name) => ({ name, image: "busybox" })),
        },
      }),
    ),
});

describe("resolvePodLogTarget", () => {
  it("an ephemeral container is a container of the pod; the 400 for a missing name lists them", async () => {
    assert.deepEqual(await resolvePodLogTarget(handlers(["app"], ["debugger-x"]), { namespace: "default", name: "p", container: "debugger-x" }), {
      node: "n1",
      uid: "u1",
      container: "debugger-x",
    });
    await rejects(
      resolvePodLogTarget(handlers(["a", "b"], ["debugger-x"]), { namespace: "default", name: "p" }),
      400,
      "BadRequest",
      /^a container name must be specified for pod p, choose one of: \[a b\] or one of the ephemeral containers: \[debugger-x\]$/,
    );
    await rejects(resolvePodLogTarget(handlers(["app"], []), { namespace: "default", name: "p", container: "debugger-x" }), 400, "BadRequest", /is not valid/);
  });
});
