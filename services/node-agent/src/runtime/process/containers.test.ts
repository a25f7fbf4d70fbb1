// test-tier: servers
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { RuntimeRequestError } from "../runtime.js";
import { ProcessRuntime } from "./process-runtime.js";
import { LoopbackNetwork } from "./test-network.js";
import { BUSYBOX, logText, rig, trackPids, waitStatus, type TestRig } from "./test-helpers.js";

describe("ProcessRuntime containers", () => {
  let r: TestRig | undefined;
  afterEach(async () => {
    await r?.cleanup();
    r = undefined;
  });

  it("a container allocating past its memory limit is OOMKilled", async () => {
    r = await rig();
    const pod = r.pod("oom", {
      containers: [
        {
          name: "hog",
          image: BUSYBOX,
          command: ["sh", "-c", "echo start; x=aaaaaaaa; while :; do x=$x$x; done"],
          resources: { limits: { memory: "32Mi", cpu: "500m" } },
        },
      ],
    });
    const uid = pod.metadata!.uid;
    await r.rt.startPod(pod);
    const s = await waitStatus(r, uid, "hog", (c) => Boolean(c.state?.terminated), "the hog ended");
    assert.equal(s.state?.terminated?.reason, "OOMKilled");
    assert.equal(s.state?.terminated?.exitCode, 137);
    assert.equal(await logText(r, uid, { container: "hog" }), "start\n");
  });

  it("kill -9 of the container's process from outside: exit 137 reported and listeners called", async () => {
    r = await rig();
    const pod = r.pod("killed", { containers: [{ name: "c", image: BUSYBOX, command: ["sleep", "300"] }] });
    const uid = pod.metadata!.uid;
    await r.rt.startPod(pod);
    const { mainPid } = await trackPids(r, uid, "c");
    const changed: string[] = [];
    r.rt.onChange((p) => changed.push(p.name));
    process.kill(mainPid, "SIGKILL");
    const s = await waitStatus(r, uid, "c", (c) => Boolean(c.state?.terminated));
    assert.equal(s.state?.terminated?.exitCode, 137);
    assert.equal(s.state?.terminated?.reason, "Error");
    await waitFor(() => changed.includes("killed"), { message: "listener called" });
  });

  it("a shim killed from outside: the run is reported ContainerStatusUnknown once its processes are gone", async () => {
    r = await rig();
    const pod = r.pod("lost", { containers: [{ name: "c", image: BUSYBOX, command: ["sleep", "300"] }] });
    const uid = pod.metadata!.uid;
    await r.rt.startPod(pod);
    const { shimPid, initPid } = await trackPids(r, uid, "c");
    process.kill(shimPid, "SIGKILL");
    assert.ok(r.rt.podStatus(uid)?.containerStatuses[0]?.state?.running, "PID 1 still runs: still running");
    process.kill(initPid, "SIGKILL");
    const s = await waitStatus(r, uid, "c", (c) => Boolean(c.state?.terminated));
    assert.deepEqual([s.state?.terminated?.exitCode, s.state?.terminated?.reason], [137, "ContainerStatusUnknown"]);
  });

  it("restartContainer: restartCount 1, the run before in lastState and in the previous log", async () => {
    r = await rig();
    const pod = r.pod("restart", {
      containers: [{ name: "c", image: BUSYBOX, command: ["sh", "-c", "echo run-$(cat /tmp/n 2>/dev/null || echo fresh); echo 1 > /tmp/n; exit 3"] }],
    });
    const uid = pod.metadata!.uid;
    await r.rt.startPod(pod);
    const first = await waitStatus(r, uid, "c", (c) => Boolean(c.state?.terminated));
    assert.deepEqual([first.state?.terminated?.exitCode, first.state?.terminated?.reason], [3, "Error"]);
    await assert.rejects(async () => logText(r!, uid, { container: "c", previous: true }), RuntimeRequestError);
    await r.rt.restartContainer(uid, "c");
    const second = await waitStatus(r, uid, "c", (c) => c.restartCount === 1 && Boolean(c.state?.terminated));
    assert.equal(second.lastState?.terminated?.exitCode, 3);
    assert.equal(second.lastState?.terminated?.containerId, first.state?.terminated?.containerId);
    assert.notEqual(second.containerId, first.containerId);
    assert.equal(await logText(r, uid, { container: "c", previous: true }), "run-fresh\n");
    assert.equal(await logText(r, uid, { container: "c" }), "run-fresh\n", "a restart gets a fresh root (its /tmp too)");
    await assert.rejects(async () => logText(r!, uid, { container: "nope" }), /container nope is not valid for pod restart/);
  });

  it("logs: tailLines, timestamps, sinceSeconds and follow until the container ends", async () => {
    r = await rig();
    const wait = (f: string) => `until [ -f /tmp/${f} ]; do sleep 0.05; done`;
    const pod = r.pod("logs", {
      containers: [
        { name: "c", image: BUSYBOX, command: ["sh", "-c", `for i in 1 2 3 4 5; do echo line$i; done; ${wait("a")}; echo oops >&2; ${wait("b")}; echo late`] },
      ],
    });
    const uid = pod.metadata!.uid;
    await r.rt.startPod(pod);
    await trackPids(r, uid, "c");
    const all = "line1\nline2\nline3\nline4\nline5\n";
    await waitFor(async () => (await logText(r!, uid, { container: "c" })) === all, { message: "five lines logged" });
    assert.equal(await logText(r, uid, { container: "c", tailLines: 2 }), "line4\nline5\n");
    assert.equal(await logText(r, uid, { container: "c", sinceSeconds: 3600 }), all);
    await r.rt.exec(uid, "c", ["touch", "/tmp/a"], 5000);
    await waitFor(async () => (await logText(r!, uid, { container: "c" })).endsWith("oops\n"), { message: "stderr logged" });
    const stamped = (await logText(r, uid, { container: "c", timestamps: true, tailLines: 1 })).split(" ");
    assert.match(stamped[0]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
    assert.equal(stamped[1], "oops\n");
    const got: string[] = [];
    const follow = (async () => {
      for await (const chunk of r!.rt.logs(
        uid,
        { container: "c", follow: true, timestamps: false, previous: false, tailLines: 1 },
        AbortSignal.timeout(20_000),
      )) {
        got.push(Buffer.from(chunk).toString("utf8"));
      }
    })();
    await waitFor(() => got.join("") === "oops\n", { message: "follow starts with the tail" });
    await r.rt.exec(uid, "c", ["touch", "/tmp/b"], 5000);
    await follow; // ends on its own once the container ended
    assert.equal(got.join(""), "oops\nlate\n");
  });

  it("rotates a container's log past logMaxBytes, keeping logMaxFiles, and reads across the rotation", async () => {
    r = await rig({ logMaxBytes: 300, logMaxFiles: 2 });
    const pod = r.pod("chatty", {
      containers: [{ name: "c", image: BUSYBOX, command: ["sh", "-c", "for i in $(seq 1 20); do echo line$i; done; exec sleep 300"] }],
    });
    const uid = pod.metadata!.uid;
    await r.rt.startPod(pod);
    await trackPids(r, uid, "c");
    const dir = path.join(r.stateDir, "pods", uid, "c");
    await waitFor(() => fs.existsSync(path.join(dir, "0.log.1")) && fs.statSync(path.join(dir, "0.log")).size === 0, { message: "rotated" });
    assert.equal(await logText(r, uid, { container: "c" }), Array.from({ length: 20 }, (_, i) => `line${i + 1}\n`).join(""));
    assert.equal(fs.existsSync(path.join(dir, "0.log.2")), false, "two files at most");
  });

  it("a second runtime on the same state dir (agent restart) adopts the running pod: same processes, no restart", async () => {
    r = await rig();
    const pod = r.pod("adopted", {
      containers: [
        { name: "long", image: BUSYBOX, command: ["sleep", "300"] },
        { name: "short", image: BUSYBOX, command: ["sleep", "300"] },
      ],
    });
    const uid = pod.metadata!.uid;
    const before = await r.rt.startPod(pod);
    const pids = await trackPids(r, uid, "long");
    const short = await trackPids(r, uid, "short");
    await r.rt.close();
    // While no agent runs, one container ends: its shim records the exit on its own.
    process.kill(short.mainPid, "SIGKILL");
    await waitFor(() => fs.existsSync(path.join(r!.stateDir, "pods", uid, "short", "0.exit")), { message: "the shim recorded the exit" });
    const net2 = new LoopbackNetwork(r.opts.network.podCidr);
    const rt2 = new ProcessRuntime({ ...r.opts, network: net2 });
    r.rt = rt2;
    await rt2.init();
    assert.deepEqual(rt2.listPods(), [{ uid, namespace: "default", name: "adopted" }]);
    assert.equal(net2.reserve(before.podIp), false, "the pod's IP is reserved again");
    const adopted = await rt2.adoptPod(pod);
    assert.equal(adopted?.podIp, before.podIp);
    const [long, ended] = adopted!.containerStatuses;
    assert.deepEqual([long?.restartCount, long?.containerId, Boolean(long?.state?.running)], [0, before.containerStatuses[0]!.containerId, true]);
    assert.deepEqual([ended?.state?.terminated?.exitCode, ended?.state?.terminated?.reason], [137, "Error"]);
    assert.deepEqual(rt2.processes(uid, "long"), pids, "the same processes, not restarted");
    const changed: string[] = [];
    rt2.onChange((p) => changed.push(p.uid));
    process.kill(pids.mainPid, "SIGKILL");
    await waitStatus(r, uid, "long", (c) => c.state?.terminated?.exitCode === 137);
    await waitFor(() => changed.includes(uid), { message: "the new runtime's listener is called" });
  });
});
