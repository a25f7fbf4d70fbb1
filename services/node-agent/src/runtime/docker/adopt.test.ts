// test-tier: servers
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { cleanup, docker, dockerUnavailable, makePod, newRuntime, nodeContainers, sh, TestNetwork, testNode } from "./test-support.js";

const skip = await dockerUnavailable();

describe("DockerRuntime after an agent restart", { skip }, () => {
  it("adopts its pods with the same containers, restarting nothing, and keeps following them", async () => {
    const node = testNode("adopt");
    const first = await newRuntime(node);
    const stateDir = first.stateDir;
    let second: Awaited<ReturnType<typeof newRuntime>> | undefined;
    try {
      const pod = makePod("web", { containers: [sh("app", "exec httpd -f -p 8080"), sh("side", "exec sleep 1000")] }, node);
      const uid = pod.metadata!.uid;
      const before = await first.rt.startPod(pod);
      await first.rt.close();
      const ids = (await nodeContainers(node)).map((c) => c.Id).sort();

      const net = new TestNetwork();
      second = await newRuntime(node, { stateDir, network: net });
      assert.deepEqual(second.rt.listPods(), [{ uid, namespace: node, name: "web" }]);
      assert.equal(net.pool.reserve(before.podIp), false, "the pod's IP was reserved at init");
      assert.equal(await second.rt.adoptPod(makePod("other", { containers: [sh("app", "true")] }, node)), undefined);
      const after = await second.rt.adoptPod(pod);
      assert.deepEqual(after, before);
      assert.deepEqual((await nodeContainers(node)).map((c) => c.Id).sort(), ids, "same containers, none new");
      for (const id of ids) assert.equal((await docker.getContainer(id).inspect()).RestartCount, 0);

      // Events are followed again: an exit is seen by the new instance.
      const changed: string[] = [];
      second.rt.onChange((p) => changed.push(p.uid));
      await docker.getContainer(before.containerStatuses[1]!.containerId.slice("docker://".length)).kill();
      await waitFor(() => second!.rt.podStatus(uid)?.containerStatuses[1]?.state?.terminated, { message: "exit seen" });
      assert.ok(changed.includes(uid));
      await second.rt.restartContainer(uid, "side");
      assert.equal(second.rt.podStatus(uid)!.containerStatuses[1]!.restartCount, 1);
      await second.rt.stopPod({ uid, namespace: node, name: "web" }, 0);
      assert.deepEqual(await nodeContainers(node), []);
    } finally {
      await first.rt.close();
      await second?.rt.close();
      await cleanup(node, stateDir);
    }
  });

  it("removes, at init, the containers of a pod whose sandbox is gone", async () => {
    const node = testNode("orphan");
    const first = await newRuntime(node);
    const stateDir = first.stateDir;
    let second: Awaited<ReturnType<typeof newRuntime>> | undefined;
    try {
      const pod = makePod("orphan", { containers: [sh("app", "exec sleep 1000")] }, node);
      await first.rt.startPod(pod);
      await first.rt.close();
      const sandbox = (await nodeContainers(node)).find((c) => c.Names[0] === `/choreo_${node}_orphan_POD_${pod.metadata!.uid.slice(0, 8)}`)!;
      await docker.getContainer(sandbox.Id).remove({ force: true });
      second = await newRuntime(node, { stateDir });
      assert.deepEqual(second.rt.listPods(), []);
      assert.deepEqual(await nodeContainers(node), []);
      assert.equal(await second.rt.adoptPod(pod), undefined);
    } finally {
      await first.rt.close();
      await second?.rt.close();
      await cleanup(node, stateDir);
    }
  });
});
