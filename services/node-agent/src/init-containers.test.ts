// The init sequence (pure): which init container runs next, what phase and conditions follow, how the statuses look.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { ContainerStatus, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { initialized, nextInitStep, POD_INITIALIZING } from "./init-containers.js";
import { buildPodStatus, podPhase } from "./pod-status.js";

const base = (name: string): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
  image: "busybox",
  imageId: "",
  allocatedResources: {},
  volumeMounts: [],
  allocatedResourcesStatus: [],
  containerId: "",
  started: false,
  lastState: undefined,
  state: undefined,
});
const pending = (name: string): ContainerStatus => ({ ...base(name), state: { waiting: { reason: POD_INITIALIZING, message: "" } } });
const creating = (name: string): ContainerStatus => ({ ...base(name), state: { waiting: { reason: "ContainerCreating", message: "" } } });
const running = (name: string): ContainerStatus => ({
  ...base(name),
  ready: true,
  started: true,
  containerId: `x://${name}`,
  state: { running: { startedAt: "2025-01-01T00:00:00Z" } },
});
const exited = (name: string, exitCode: number, restartCount = 0): ContainerStatus => ({
  ...base(name),
  restartCount,
  containerId: `x://${name}`,
  state: {
    terminated: {
      exitCode,
      signal: 0,
      reason: exitCode ? "Error" : "Completed",
      message: "",
      startedAt: "2025-01-01T00:00:00Z",
      finishedAt: "2025-01-01T00:00:01Z",
      containerId: `x://${name}`,
    },
  },
});

function pod(policy = "Always"): Pod {
  return unwrap(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", namespace: "default", uid: "u" },
      spec: {
        nodeName: "n1",
        restartPolicy: policy,
        initContainers: [
          { name: "one", image: "busybox" },
          { name: "two", image: "busybox" },
        ],
        containers: [{ name: "app", image: "busybox" }],
      },
    }),
  ) as Pod;
}

describe("init sequence: the next step", () => {
  it("starts the init containers one at a time, in order, each after the one before completed", () => {
    const apps = [pending("app")];
    assert.deepEqual(nextInitStep("Always", [pending("one"), pending("two")], apps), { kind: "start", container: "one" });
    assert.deepEqual(nextInitStep("Always", [creating("one"), pending("two")], apps), { kind: "wait", container: "one" });
    assert.deepEqual(nextInitStep("Always", [running("one"), pending("two")], apps), { kind: "wait", container: "one" });
    assert.deepEqual(nextInitStep("Always", [exited("one", 0), pending("two")], apps), { kind: "start", container: "two" });
    assert.deepEqual(nextInitStep("Always", [exited("one", 0), running("two")], apps), { kind: "wait", container: "two" });
    assert.deepEqual(nextInitStep("Always", [exited("one", 0), exited("two", 0)], apps), { kind: "done" });
    assert.deepEqual(nextInitStep("Always", [], apps), { kind: "done" }, "no init containers");
  });

  it("a failed init container restarts under Always and OnFailure, fails the pod under Never", () => {
    const inits = [exited("one", 0), exited("two", 2)];
    assert.deepEqual(nextInitStep("Always", inits, [pending("app")]), { kind: "restart", container: "two" });
    assert.deepEqual(nextInitStep("OnFailure", inits, [pending("app")]), { kind: "restart", container: "two" });
    assert.deepEqual(nextInitStep("Never", inits, [pending("app")]), { kind: "failed", container: "two" });
  });

  it("a pod whose app containers ran is initialized, even with its init records gone or rerunning (the kubelet's rule)", () => {
    assert.equal(initialized([pending("one"), pending("two")], [running("app")]), true);
    assert.equal(initialized([exited("one", 0), pending("two")], [pending("app")]), false);
    assert.deepEqual(nextInitStep("Always", [pending("one")], [exited("app", 1)]), { kind: "done" });
  });
});

describe("init sequence: phase, conditions and statuses", () => {
  const rt = (inits: ContainerStatus[], apps: ContainerStatus[]) => ({
    uid: "u",
    podIp: "10.244.0.2",
    startedAt: "2025-01-01T00:00:00Z",
    initContainerStatuses: inits,
    containerStatuses: apps,
  });
  const cond = (s: ReturnType<typeof buildPodStatus>, type: string) => s.conditions.find((c) => c.type === type);

  it("Pending while initializing, Failed when one failed under Never, then the app containers decide", () => {
    assert.equal(podPhase("Always", [pending("app")], [running("one"), pending("two")]), "Pending");
    assert.equal(podPhase("Always", [pending("app")], [exited("one", 1)]), "Pending", "restarting: still Pending");
    assert.equal(podPhase("OnFailure", [pending("app")], [exited("one", 1)]), "Pending");
    assert.equal(podPhase("Never", [pending("app")], [exited("one", 1), pending("two")]), "Failed");
    assert.equal(podPhase("Never", [running("app")], [exited("one", 0), exited("two", 0)]), "Running");
    assert.equal(podPhase("Never", [exited("app", 0)], [exited("one", 0), exited("two", 0)]), "Succeeded");
  });

  it("Initialized False (ContainersNotInitialized, the incomplete ones named) until all completed; init statuses ready once completed", () => {
    const s = buildPodStatus(pod(), rt([exited("one", 0), running("two")], [pending("app")]), { hostIp: "h", now: "2025-01-01T00:00:02Z" });
    assert.equal(s.phase, "Pending");
    assert.deepEqual(
      { status: cond(s, "Initialized")?.status, reason: cond(s, "Initialized")?.reason, message: cond(s, "Initialized")?.message },
      { status: "False", reason: "ContainersNotInitialized", message: "containers with incomplete status: [two]" },
    );
    assert.equal(cond(s, "Ready")?.status, "False");
    assert.deepEqual(
      s.initContainerStatuses.map((c) => [c.name, c.ready, c.started]),
      [
        ["one", true, false],
        ["two", false, true],
      ],
    );
    assert.equal(s.containerStatuses[0]?.state?.waiting?.reason, "PodInitializing");

    const done = buildPodStatus(pod(), rt([exited("one", 0), exited("two", 0)], [running("app")]), { hostIp: "h", now: "2025-01-01T00:00:03Z" });
    assert.equal(done.phase, "Running");
    assert.deepEqual(
      done.conditions.map((c) => `${c.type}=${c.status}`),
      ["Initialized=True", "Ready=True", "ContainersReady=True", "PodScheduled=True"],
    );
    assert.equal(cond(done, "Initialized")?.message, "");
  });

  it("an init container in back-off shows CrashLoopBackOff with its exit as lastState, and the pod stays Pending", () => {
    const s = buildPodStatus(pod(), rt([exited("one", 1, 2), pending("two")], [pending("app")]), { hostIp: "h", now: "n", backingOff: new Set(["one"]) });
    assert.equal(s.phase, "Pending");
    assert.equal(s.initContainerStatuses[0]?.state?.waiting?.reason, "CrashLoopBackOff");
    assert.equal(s.initContainerStatuses[0]?.lastState?.terminated?.exitCode, 1);
    assert.equal(s.initContainerStatuses[0]?.restartCount, 2);
    const failed = buildPodStatus(pod("Never"), rt([exited("one", 1), pending("two")], [pending("app")]), { hostIp: "h", now: "n" });
    assert.equal(failed.phase, "Failed");
    assert.equal(cond(failed, "Initialized")?.message, "containers with incomplete status: [one two]");
  });
});
