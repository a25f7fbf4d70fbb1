// test-tier: servers
// Init containers in the docker runtime: a pod with them creates none, each runs when the agent starts it
// (startContainer), a finished one keeps its log and refuses exec, and a runtime restarted in between (agent
// restart) adopts the pod without starting what had not started.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { RuntimeRequestError, type PodRuntimeStatus } from "../runtime.js";
import { cleanup, collect, dockerUnavailable, makePod, newRuntime, nodeContainers, sh, testNode } from "./test-support.js";

const reasons = (s: PodRuntimeStatus | undefined): string[] =>
  [...(s?.initContainerStatuses ?? []), ...(s?.containerStatuses ?? [])].map(
    (c) => `${c.name}=${c.state?.waiting?.reason ?? (c.state?.running ? "running" : `exit ${c.state?.terminated?.exitCode}`)}`,
  );
const logOpts = (container: string) => ({ container, follow: false, timestamps: false, previous: false });

const skip = await dockerUnavailable();

describe("DockerRuntime init containers", { skip }, () => {
  it("starts nothing until startContainer; a finished init container keeps its log, refuses exec, and is not started again", async () => {
    const node = testNode("init");
    const first = await newRuntime(node);
    let second: Awaited<ReturnType<typeof newRuntime>> | undefined;
    try {
      const work = { volumeMounts: [{ name: "work", mountPath: "/work" }] };
      const pod = makePod(
        "init",
        {
          volumes: [{ name: "work", emptyDir: {} }],
          initContainers: [sh("one", "echo one >> /work/runs; echo one done", work), sh("two", "echo two >> /work/runs; cat /work/runs", work)],
          containers: [sh("app", "exec sleep 300", work)],
        },
        node,
      );
      const uid = pod.metadata!.uid;
      const rt = first.rt;
      assert.deepEqual(reasons(await rt.startPod(pod)), ["one=PodInitializing", "two=PodInitializing", "app=PodInitializing"]);
      assert.equal((await nodeContainers(node)).length, 1, "only the sandbox");

      await rt.startContainer(uid, "one");
      await waitFor(() => rt.podStatus(uid)?.initContainerStatuses?.[0]?.state?.terminated, { message: "one ended" });
      await rt.startContainer(uid, "one"); // it ran: a no-op
      assert.deepEqual(reasons(rt.podStatus(uid)), ["one=exit 0", "two=PodInitializing", "app=PodInitializing"]);
      assert.equal(await collect(rt.logs(uid, logOpts("one"), AbortSignal.timeout(15_000))), "one done\n");
      await assert.rejects(rt.exec(uid, "one", ["true"], 2000), (err: unknown) => err instanceof RuntimeRequestError && /not running/.test(err.message));

      // An agent restart here: the new runtime adopts the pod with the first done and starts nothing else.
      await rt.close();
      second = await newRuntime(node, { stateDir: first.stateDir });
      const rt2 = second.rt;
      assert.deepEqual(reasons(await rt2.adoptPod(pod)), ["one=exit 0", "two=PodInitializing", "app=PodInitializing"]);
      assert.equal((await nodeContainers(node)).length, 2, "the sandbox and the first's run");

      await rt2.startContainer(uid, "two");
      await waitFor(() => rt2.podStatus(uid)?.initContainerStatuses?.[1]?.state?.terminated, { message: "two ended" });
      assert.equal(await collect(rt2.logs(uid, logOpts("two"), AbortSignal.timeout(15_000))), "one\ntwo\n", "the second saw the first's file");
      await rt2.startContainer(uid, "app");
      await waitFor(() => rt2.podStatus(uid)?.containerStatuses[0]?.state?.running, { message: "app running" });
      assert.deepEqual(reasons(rt2.podStatus(uid)), ["one=exit 0", "two=exit 0", "app=running"]);
      await rt2.stopPod({ uid, namespace: node, name: "init" }, 0);
      assert.deepEqual(await nodeContainers(node), []);
    } finally {
      await first.rt.close();
      await second?.rt.close();
      await cleanup(node, first.stateDir);
    }
  });
});
