import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { PodStatus, type ContainerStatus, type Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { buildPodStatus, podPhase, sameStatus } from "./pod-status.js";

const running = (name: string, ready = true): ContainerStatus => ({
  name,
  ready,
  restartCount: 0,
  image: "nginx",
  imageId: "hollow://nginx",
  allocatedResources: {},
  volumeMounts: [],
  allocatedResourcesStatus: [],
  containerId: `hollow://u/${name}/0`,
  started: true,
  lastState: undefined,
  state: { running: { startedAt: "2025-01-01T00:00:00Z" } },
});
const exited = (name: string, exitCode: number): ContainerStatus => ({
  ...running(name, false),
  started: false,
  state: {
    terminated: {
      exitCode,
      signal: 0,
      reason: exitCode ? "Error" : "Completed",
      message: "",
      startedAt: "",
      finishedAt: "2025-01-01T00:00:01Z",
      containerId: "",
    },
  },
});
const creating = (name: string): ContainerStatus => ({
  ...running(name, false),
  started: false,
  state: { waiting: { reason: "ContainerCreating", message: "" } },
});

function pod(policy = "Always"): Pod {
  const p = unwrap(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", namespace: "default", uid: "u" },
      spec: { nodeName: "n1", restartPolicy: policy, containers: [{ name: "a", image: "nginx" }] },
    }),
  ) as Pod;
  p.status = {
    phase: "Pending",
    conditions: [{ type: "PodScheduled", status: "True", lastProbeTime: "", lastTransitionTime: "2025-01-01T00:00:00Z", reason: "", message: "" }],
    message: "",
    reason: "",
    nominatedNodeName: "",
    hostIp: "",
    podIp: "",
    podIps: [],
    startTime: "",
    initContainerStatuses: [],
    containerStatuses: [],
    qosClass: "BestEffort",
    hostIps: [],
    ephemeralContainerStatuses: [],
    resize: "",
    resourceClaimStatuses: [],
  };
  return p;
}

describe("pod phase", () => {
  it("follows containers and restart policy", () => {
    assert.equal(podPhase("Always", []), "Pending");
    assert.equal(podPhase("Always", [creating("a")]), "Pending");
    assert.equal(podPhase("Always", [running("a"), exited("b", 1)]), "Running");
    assert.equal(podPhase("Always", [exited("a", 0)]), "Running", "Always restarts even a success");
    assert.equal(podPhase("OnFailure", [exited("a", 1)]), "Running", "restarting");
    assert.equal(podPhase("OnFailure", [exited("a", 0)]), "Succeeded");
    assert.equal(podPhase("Never", [exited("a", 0), exited("b", 1)]), "Failed");
    assert.equal(podPhase("Never", [exited("a", 0)]), "Succeeded");
  });
});

describe("pod status", () => {
  const rt = { uid: "u", podIp: "10.244.0.2", startedAt: "2025-01-01T00:00:00Z", containerStatuses: [running("a")] };

  it("reports Running, the four conditions, IPs, hostIP and start time; keeps qosClass", () => {
    const s = buildPodStatus(pod(), rt, { hostIp: "172.16.0.1", now: "2025-01-01T00:00:02Z" });
    assert.equal(s.phase, "Running");
    assert.deepEqual(
      s.conditions.map((c) => `${c.type}=${c.status}`),
      ["Initialized=True", "Ready=True", "ContainersReady=True", "PodScheduled=True"],
    );
    assert.equal(s.conditions.find((c) => c.type === "PodScheduled")?.lastTransitionTime, "2025-01-01T00:00:00Z", "kept");
    assert.equal(s.podIp, "10.244.0.2");
    assert.deepEqual(s.podIps, [{ ip: "10.244.0.2" }]);
    assert.equal(s.hostIp, "172.16.0.1");
    assert.equal(s.startTime, "2025-01-01T00:00:00Z");
    assert.equal(s.qosClass, "BestEffort");
  });

  it("is the same status when nothing changed, even later (no write)", () => {
    const p = pod();
    p.status = buildPodStatus(p, rt, { hostIp: "h", now: "2025-01-01T00:00:02Z" });
    assert.ok(sameStatus(p.status, buildPodStatus(p, rt, { hostIp: "h", now: "2025-01-01T00:09:00Z" })));
    const unready = { ...rt, containerStatuses: [running("a", false)] };
    const s = buildPodStatus(p, unready, { hostIp: "h", now: "2025-01-01T00:09:00Z" });
    assert.equal(sameStatus(p.status, s), false);
    assert.equal(s.conditions.find((c) => c.type === "Ready")?.status, "False");
    assert.equal(s.conditions.find((c) => c.type === "Ready")?.lastTransitionTime, "2025-01-01T00:09:00Z");
  });

  it("compares as protobuf bytes: a status decoded from the api is the same as the one rebuilt; any field changed is not", () => {
    const p = pod();
    p.status = buildPodStatus(p, rt, { hostIp: "h", now: "2025-01-01T00:00:02Z" });
    const decoded = PodStatus.decode(PodStatus.encode(p.status).finish());
    assert.ok(sameStatus(decoded, buildPodStatus(p, rt, { hostIp: "h", now: "2025-01-01T00:09:00Z" })));
    // Not equal as objects (an unset sub-message against an empty one), and not as bytes either.
    const cs = decoded.containerStatuses[0]!;
    assert.equal(cs.lastState, undefined);
    assert.equal(sameStatus({ ...decoded, containerStatuses: [{ ...cs, lastState: {} }] }, decoded), false);
    assert.equal(sameStatus({ ...decoded, podIp: "10.244.0.3" }, decoded), false);
    assert.equal(sameStatus({ ...decoded, conditions: decoded.conditions.map((c) => ({ ...c, reason: c.type })) }, decoded), false);
    assert.equal(sameStatus({ ...decoded, containerStatuses: [] }, decoded), false);
    assert.equal(sameStatus(undefined, decoded), false);
  });

  it("shows a container in back-off as CrashLoopBackOff with its exit as lastState", () => {
    const s = buildPodStatus(pod(), { ...rt, containerStatuses: [exited("a", 1)] }, { hostIp: "h", now: "n", backingOff: new Set(["a"]) });
    assert.equal(s.phase, "Running");
    assert.equal(s.containerStatuses[0]?.state?.waiting?.reason, "CrashLoopBackOff");
    assert.equal(s.containerStatuses[0]?.lastState?.terminated?.exitCode, 1);
    const failed = buildPodStatus(pod("Never"), { ...rt, containerStatuses: [exited("a", 1)] }, { hostIp: "h", now: "n" });
    assert.equal(failed.phase, "Failed");
    assert.equal(failed.conditions.find((c) => c.type === "Ready")?.reason, "PodCompleted");
  });
});
