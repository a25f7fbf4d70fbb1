import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { waitFor } from "@choreo/kit/testing";
import { HOLLOW_ANNOTATIONS, HollowRuntime } from "./hollow.js";
import { IpPool } from "./ip-pool.js";

function pod(name: string, opts: { uid?: string; annotations?: Record<string, string>; containers?: string[] } = {}): Pod {
  const p = unwrap(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: "default", uid: opts.uid ?? `uid-${name}`, annotations: opts.annotations ?? {} },
      spec: { containers: (opts.containers ?? ["app"]).map((c) => ({ name: c, image: "nginx" })), restartPolicy: "Always" },
    }),
  ) as Pod;
  return p;
}

describe("IpPool", () => {
  it("hands out host addresses of the CIDR, never network, gateway or broadcast, and reuses released ones later", () => {
    const pool = new IpPool("10.244.3.0/29");
    assert.equal(pool.capacity, 5);
    const got = [pool.allocate(), pool.allocate(), pool.allocate(), pool.allocate(), pool.allocate()];
    assert.deepEqual(got, ["10.244.3.2", "10.244.3.3", "10.244.3.4", "10.244.3.5", "10.244.3.6"]);
    assert.throws(() => pool.allocate(), /exhausted/);
    pool.release("10.244.3.4");
    assert.equal(pool.allocate(), "10.244.3.4");
    assert.equal(pool.reserve("10.244.3.4"), false, "taken");
    assert.equal(pool.reserve("10.9.9.9"), false, "outside");
  });
});

describe("HollowRuntime", () => {
  it("starts a pod after the delay: running containers, ready, an IP from the pod CIDR", async () => {
    const rt = new HollowRuntime({ podCidr: "10.244.7.0/24", startDelayMs: 5 });
    const st = await rt.startPod(pod("a", { containers: ["app", "sidecar"] }));
    assert.match(st.podIp, /^10\.244\.7\.\d+$/);
    assert.equal(st.containerStatuses.length, 2);
    for (const cs of st.containerStatuses) {
      assert.ok(cs.state?.running?.startedAt);
      assert.equal(cs.ready, true);
      assert.equal(cs.started, true);
      assert.equal(cs.restartCount, 0);
    }
    assert.deepEqual(await rt.startPod(pod("a", { containers: ["app", "sidecar"] })), st, "idempotent");
    assert.deepEqual(rt.listPods(), [{ uid: "uid-a", namespace: "default", name: "a" }]);
    await rt.stopPod({ uid: "uid-a", namespace: "default", name: "a" }, 30);
    assert.equal(rt.podStatus("uid-a"), undefined);
    await rt.close();
  });

  it("fail: containers exit 1, and every restart fails again", async () => {
    const rt = new HollowRuntime({ podCidr: "10.244.7.0/24", startDelayMs: 5 });
    const changed: string[] = [];
    rt.onChange((p) => changed.push(p.name));
    await rt.startPod(pod("b"));
    rt.fail("uid-b");
    assert.deepEqual(changed, ["b"]);
    const t = rt.podStatus("uid-b")!.containerStatuses[0]!;
    assert.equal(t.state?.terminated?.exitCode, 1);
    assert.equal(t.state?.terminated?.reason, "Error");
    assert.equal(t.ready, false);
    await rt.restartContainer("uid-b", "app");
    const r = rt.podStatus("uid-b")!.containerStatuses[0]!;
    assert.equal(r.restartCount, 1);
    assert.equal(r.lastState?.terminated?.exitCode, 1);
    await waitFor(() => rt.podStatus("uid-b")!.containerStatuses[0]!.state?.terminated, { message: "crash loop" });
    await rt.close();
  });

  it("crash: containers exit 1 once; a restart keeps running", async () => {
    const rt = new HollowRuntime({ podCidr: "10.244.7.0/24", startDelayMs: 5 });
    await rt.startPod(pod("c"));
    rt.crash("uid-c");
    assert.equal(rt.podStatus("uid-c")!.containerStatuses[0]!.state?.terminated?.exitCode, 1);
    await rt.restartContainer("uid-c", "app");
    await new Promise((r) => setTimeout(r, 30));
    const cs = rt.podStatus("uid-c")!.containerStatuses[0]!;
    assert.ok(cs.state?.running);
    assert.equal(cs.restartCount, 1);
    await rt.close();
  });

  it("setReady flips readiness; complete exits 0; the exit-after annotation finishes containers", async () => {
    const rt = new HollowRuntime({ podCidr: "10.244.7.0/24", startDelayMs: 5 });
    await rt.startPod(pod("d"));
    rt.setReady("uid-d", false);
    assert.equal(rt.podStatus("uid-d")!.containerStatuses[0]!.ready, false);
    rt.setReady("uid-d", true);
    assert.equal(rt.podStatus("uid-d")!.containerStatuses[0]!.ready, true);
    rt.complete("uid-d");
    assert.equal(rt.podStatus("uid-d")!.containerStatuses[0]!.state?.terminated?.reason, "Completed");

    await rt.startPod(pod("e", { annotations: { [HOLLOW_ANNOTATIONS.exitAfterMs]: "10", [HOLLOW_ANNOTATIONS.exitCode]: "3" } }));
    const t = await waitFor(() => rt.podStatus("uid-e")!.containerStatuses[0]!.state?.terminated, { message: "exit" });
    assert.equal(t.exitCode, 3);
    await rt.close();
  });

  it("init containers: nothing runs until startContainer; each completes on its own (init-exit-code scripts a failure)", async () => {
    const rt = new HollowRuntime({ podCidr: "10.244.7.0/24", startDelayMs: 5 });
    const withInits = (name: string, annotations: Record<string, string> = {}): Pod => {
      const p = pod(name, { annotations });
      p.spec!.initContainers = [{ ...p.spec!.containers[0]!, name: "setup" }];
      return p;
    };
    const st = await rt.startPod(withInits("i"));
    assert.equal(st.initContainerStatuses?.[0]?.state?.waiting?.reason, "PodInitializing");
    assert.equal(st.containerStatuses[0]?.state?.waiting?.reason, "PodInitializing");
    await rt.startContainer("uid-i", "setup");
    const done = await waitFor(() => rt.podStatus("uid-i")!.initContainerStatuses?.[0]?.state?.terminated, { message: "setup completed" });
    assert.deepEqual([done.exitCode, done.reason], [0, "Completed"]);
    assert.equal(rt.podStatus("uid-i")!.containerStatuses[0]?.state?.waiting?.reason, "PodInitializing", "the app waits for the agent");
    await rt.startContainer("uid-i", "app");
    assert.ok(rt.podStatus("uid-i")!.containerStatuses[0]?.state?.running);

    await rt.startPod(withInits("j", { [HOLLOW_ANNOTATIONS.initExitCode]: "4" }));
    await rt.startContainer("uid-j", "setup");
    const failed = await waitFor(() => rt.podStatus("uid-j")!.initContainerStatuses?.[0]?.state?.terminated, { message: "setup failed" });
    assert.deepEqual([failed.exitCode, failed.reason], [4, "Error"]);
    await rt.close();
  });

  it("adopts a pod from its Running status without restarting it, keeping its IP", async () => {
    const first = new HollowRuntime({ podCidr: "10.244.7.0/24", startDelayMs: 5 });
    const st = await first.startPod(pod("f"));
    const p = pod("f");
    p.status = {
      phase: "Running",
      conditions: [],
      message: "",
      reason: "",
      nominatedNodeName: "",
      hostIp: "",
      podIp: st.podIp,
      podIps: [{ ip: st.podIp }],
      startTime: st.startedAt,
      initContainerStatuses: [],
      containerStatuses: st.containerStatuses,
      qosClass: "",
      hostIps: [],
      ephemeralContainerStatuses: [],
      resize: "",
      resourceClaimStatuses: [],
    };
    const second = new HollowRuntime({ podCidr: "10.244.7.0/24", startDelayMs: 5 });
    assert.deepEqual(await second.adoptPod(p), st);
    assert.notEqual(second.podStatus("uid-f"), undefined);
    assert.notEqual((await second.startPod(pod("g"))).podIp, st.podIp, "the adopted IP is reserved");
    p.status.phase = "Pending";
    assert.equal(await new HollowRuntime({ podCidr: "10.244.7.0/24" }).adoptPod(p), undefined, "only running pods are adopted");
    await first.close();
    await second.close();
  });
});
