// test-tier: servers
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { RuntimeRequestError, type LogOptions, type RuntimePod } from "../runtime.js";
import { EXEC_TIMEOUT_EXIT_CODE } from "./exec.js";
import { cleanup, collect, docker, dockerUnavailable, makePod, newRuntime, nodeContainers, sh, testNode } from "./test-support.js";

const skip = await dockerUnavailable();
const never = new AbortController().signal;
const logOpts = (o: Partial<LogOptions> = {}): LogOptions => ({ container: "app", follow: false, timestamps: false, previous: false, ...o });

describe("DockerRuntime container lifecycle", { skip }, () => {
  it("reports a container killed from outside as terminated and tells the listeners; restartContainer keeps the previous run", async () => {
    const node = testNode("kill");
    const { rt, stateDir } = await newRuntime(node);
    try {
      const pod = makePod("killme", { containers: [sh("app", "echo run-$(cat /proc/sys/kernel/random/uuid); exec sleep 1000")] }, node);
      const uid = pod.metadata!.uid;
      const ref: RuntimePod = { uid, namespace: node, name: "killme" };
      const changed: string[] = [];
      rt.onChange((p) => changed.push(p.uid));
      const first = (await rt.startPod(pod)).containerStatuses[0]!;
      assert.ok(first.state?.running);
      await assert.rejects(
        collect(rt.logs(uid, logOpts({ previous: true }), never)),
        (err: unknown) => err instanceof RuntimeRequestError && err.message === `previous terminated container "app" in pod "killme" not found`,
      );

      await docker.getContainer(first.containerId.replace("docker://", "")).kill();
      const term = await waitFor(() => rt.podStatus(uid)?.containerStatuses[0]?.state?.terminated, { message: "terminated" });
      assert.equal(term.reason, "Error");
      assert.equal(term.exitCode, 137);
      assert.equal(term.containerId, first.containerId);
      assert.ok(term.startedAt && term.finishedAt);
      assert.ok(changed.includes(uid), "listener called");
      const firstLog = await collect(rt.logs(uid, logOpts(), never));

      await rt.restartContainer(uid, "app");
      const cs = rt.podStatus(uid)!.containerStatuses[0]!;
      assert.equal(cs.restartCount, 1);
      assert.ok(cs.state?.running);
      assert.notEqual(cs.containerId, first.containerId);
      assert.deepEqual(cs.lastState?.terminated, term);
      assert.equal(await collect(rt.logs(uid, logOpts({ previous: true }), never)), firstLog);
      const secondLog = await waitFor(async () => (await collect(rt.logs(uid, logOpts(), never))) || undefined);
      assert.notEqual(secondLog, firstLog);

      // A second restart removes the oldest run: only the current and previous instances stay.
      await rt.killContainer(uid, "app", 0);
      assert.ok(rt.podStatus(uid)!.containerStatuses[0]!.state?.terminated, "killContainer leaves it terminated");
      await rt.restartContainer(uid, "app");
      assert.equal(rt.podStatus(uid)!.containerStatuses[0]!.restartCount, 2);
      const names = (await nodeContainers(node)).map((c) => c.Names[0]).sort();
      const u8 = uid.slice(0, 8);
      assert.deepEqual(names, [`/choreo_${node}_killme_POD_${u8}`, `/choreo_${node}_killme_app_${u8}_1`, `/choreo_${node}_killme_app_${u8}_2`]);
      await rt.stopPod(ref, 0);
    } finally {
      await rt.close();
      await cleanup(node, stateDir);
    }
  });

  it("stops gracefully: SIGTERM reaches a shell's child through docker's init, exit 0 within the grace period", async () => {
    const node = testNode("term");
    const { rt, stateDir } = await newRuntime(node);
    try {
      const pod = makePod("term", { containers: [sh("app", "trap 'echo got-term; exit 0' TERM; echo armed; while true; do sleep 0.1; done")] }, node);
      const uid = pod.metadata!.uid;
      await rt.startPod(pod);
      // Signal only once the trap is set: before that, a SIGTERM ends the shell with 143 (seen on a loaded machine).
      await waitFor(async () => (await collect(rt.logs(uid, logOpts(), never))).includes("armed"), { message: "the trap is set" });
      await rt.killContainer(uid, "app", 30);
      const term = rt.podStatus(uid)!.containerStatuses[0]!.state!.terminated!;
      assert.equal(term.exitCode, 0);
      assert.equal(term.reason, "Completed");
      assert.match(await collect(rt.logs(uid, logOpts(), never)), /got-term/);
      await rt.stopPod({ uid, namespace: node, name: "term" }, 0);
    } finally {
      await rt.close();
      await cleanup(node, stateDir);
    }
  });

  it("serves logs with tailLines, timestamps and follow, and runs exec with a timeout", async () => {
    const node = testNode("logs");
    const { rt, stateDir } = await newRuntime(node);
    try {
      const pod = makePod(
        "logs",
        { containers: [sh("app", "for i in 1 2 3 4 5; do echo line-$i; done; echo oops >&2; i=0; while true; do i=$((i+1)); echo tick-$i; sleep 0.2; done")] },
        node,
      );
      const uid = pod.metadata!.uid;
      await rt.startPod(pod);
      await waitFor(async () => (await collect(rt.logs(uid, logOpts(), never))).includes("tick-1"));
      const all = await collect(rt.logs(uid, logOpts(), never));
      // stdout and stderr are separate pipes: docker copies each in order, not the two relative to each other.
      assert.match(all.replace(/(^|\n)oops\n/, "$1"), /line-1\nline-2\nline-3\nline-4\nline-5\n/, "stdout in order, demultiplexed");
      assert.match(all, /(^|\n)oops\n/, "stderr too");
      const tail = await collect(rt.logs(uid, logOpts({ tailLines: 2 }), never));
      assert.equal(tail.split("\n").filter(Boolean).length, 2);
      const stamped = await collect(rt.logs(uid, logOpts({ tailLines: 1, timestamps: true }), never));
      assert.match(stamped, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z (tick-\d+|oops)\n$/);

      const ac = new AbortController();
      const lines: string[] = [];
      for await (const chunk of rt.logs(uid, logOpts({ follow: true, tailLines: 0 }), ac.signal)) {
        lines.push(...Buffer.from(chunk).toString().split("\n").filter(Boolean));
        if (lines.length >= 2) ac.abort();
      }
      assert.ok(
        lines.every((l) => l.startsWith("tick-")),
        lines.join(","),
      );

      const ok = await rt.exec(uid, "app", ["sh", "-c", "echo out; echo err >&2; exit 3"], 5000);
      assert.equal(ok.exitCode, 3);
      assert.match(ok.output, /out\n/);
      assert.match(ok.output, /err\n/);
      const slow = await rt.exec(uid, "app", ["sleep", "30"], 300);
      assert.equal(slow.exitCode, EXEC_TIMEOUT_EXIT_CODE);
      await assert.rejects(rt.exec(uid, "nope", ["true"], 1000), RuntimeRequestError);
      await rt.stopPod({ uid, namespace: node, name: "logs" }, 0);
    } finally {
      await rt.close();
      await cleanup(node, stateDir);
    }
  });
  it("stops the containers of a pod whose sandbox died, and restarts them in a new sandbox with the same IP", async () => {
    const node = testNode("sandbox");
    const { rt, net, stateDir } = await newRuntime(node);
    try {
      const pod = makePod("phoenix", { containers: [sh("app", "exec sleep 1000"), sh("side", "exec sleep 1000")] }, node);
      const uid = pod.metadata!.uid;
      const before = await rt.startPod(pod);
      const sandbox = (await nodeContainers(node)).find((c) => c.Names[0] === `/choreo_${node}_phoenix_POD_${uid.slice(0, 8)}`)!;
      await docker.getContainer(sandbox.Id).kill();
      await waitFor(() => rt.podStatus(uid)?.containerStatuses.every((c) => c.state?.terminated), { message: "containers stopped" });
      for (const name of ["app", "side"]) await rt.restartContainer(uid, name);
      const after = rt.podStatus(uid)!;
      assert.equal(after.podIp, before.podIp);
      assert.equal(net.attached.get(uid), before.podIp);
      for (const cs of after.containerStatuses) assert.deepEqual([cs.restartCount, Boolean(cs.state?.running)], [1, true]);
      const sandboxes = (await nodeContainers(node)).filter((c) => c.Names[0] === `/choreo_${node}_phoenix_POD_${uid.slice(0, 8)}`);
      assert.equal(sandboxes.length, 1);
      assert.notEqual(sandboxes[0]!.Id, sandbox.Id);
      assert.equal(sandboxes[0]!.State, "running");
      await rt.stopPod({ uid, namespace: node, name: "phoenix" }, 0);
    } finally {
      await rt.close();
      await cleanup(node, stateDir);
    }
  });
});
