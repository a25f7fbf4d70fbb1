// Ephemeral containers on the agent's side, against the hollow runtime: started once, never again (even exited),
// reported in ephemeralContainerStatuses (never ready), never among the pod's containers.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { ephemeralToStart, startEphemeralContainers } from "./ephemeral-containers.js";
import { buildPodStatus } from "./pod-status.js";
import { HollowRuntime } from "./runtime/hollow.js";

function pod(ephemeral: string[]): Pod {
  return unwrap(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", namespace: "default", uid: "uid-p" },
      spec: {
        containers: [{ name: "app", image: "nginx" }],
        ephemeralContainers: ephemeral.map((name) => ({ name, image: "busybox", targetContainerName: "app" })),
      },
    }),
  ) as Pod;
}

describe("ephemeral containers in the node agent", () => {
  it("each new one is started once and reported apart from the app containers, never ready", async () => {
    const runtime = new HollowRuntime({ podCidr: "10.244.9.0/24", startDelayMs: 1 });
    const started: string[] = [];
    const d = { runtime, log: silentLogger(), events: { emit: (_r: unknown, _t: string, _reason: string, msg: string) => void started.push(msg) } };
    let rt = await runtime.startPod(pod([]));
    assert.deepEqual(ephemeralToStart(pod([]), rt), []);

    rt = await startEphemeralContainers(d, pod(["debugger"]), rt);
    assert.deepEqual(
      rt.ephemeralContainerStatuses?.map((c) => [c.name, Boolean(c.state?.running)]),
      [["debugger", true]],
    );
    assert.deepEqual(
      rt.containerStatuses.map((c) => c.name),
      ["app"],
    );
    assert.deepEqual(started, ["Started container debugger"]);

    // Exited: it stays exited (no restart policy applies), and a second one starts beside it.
    runtime.crash("uid-p");
    rt = runtime.podStatus("uid-p")!;
    assert.ok(rt.ephemeralContainerStatuses?.[0]?.state?.terminated, "the debugger exited");
    assert.deepEqual(
      ephemeralToStart(pod(["debugger", "second"]), rt).map((c) => c.name),
      ["second"],
    );
    rt = await startEphemeralContainers(d, pod(["debugger", "second"]), rt);
    assert.deepEqual(started, ["Started container debugger", "Started container second"]);
    assert.ok(rt.ephemeralContainerStatuses?.[0]?.state?.terminated, "not restarted");

    const status = buildPodStatus(pod(["debugger", "second"]), rt, { hostIp: "10.0.0.1", now: "2026-01-01T00:00:00Z" });
    assert.deepEqual(
      status.ephemeralContainerStatuses.map((c) => [c.name, c.ready, c.image]),
      [
        ["debugger", false, "busybox"],
        ["second", false, "busybox"],
      ],
    );
    assert.equal(status.ephemeralContainerStatuses[1]?.started, true);
    await runtime.close();
  });
});
