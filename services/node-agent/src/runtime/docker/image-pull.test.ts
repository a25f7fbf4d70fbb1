// test-tier: servers
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import type { ContainerStateWaiting } from "@choreo/kit/gen/choreo/core/v1/core";
import { LOCAL_IMAGES } from "../../images/types.js";
import { cleanup, docker, dockerUnavailable, makePod, newRuntime, sh, testNode } from "./test-support.js";

const skip = await dockerUnavailable();
const MISSING = "choreo-test/missing:0.0.1";

describe("DockerRuntime image pulls", { skip }, () => {
  it("shows ErrImagePull then ImagePullBackOff for a missing image, retries, and starts it once the image appears", async () => {
    const node = testNode("pull");
    const { rt, stateDir } = await newRuntime(node, { pullBackoff: { initialMs: 200, maxMs: 400 } });
    const tag = `choreo-test/appears:${node}`;
    try {
      const seen: string[] = [];
      const pod = makePod("missing", { containers: [{ name: "app", image: MISSING, imagePullPolicy: "IfNotPresent" }] }, node);
      const later = makePod("later", { containers: [sh("app", "sleep 1000", { image: tag })] }, node);
      const uid = pod.metadata!.uid;
      const waitingOf = (u: string): ContainerStateWaiting | undefined => rt.podStatus(u)?.containerStatuses[0]?.state?.waiting;
      rt.onChange((p) => {
        const w = waitingOf(p.uid);
        if (p.uid === uid && w && seen.at(-1) !== w.reason) seen.push(w.reason);
      });
      const status = await rt.startPod(pod);
      const w = status.containerStatuses[0]!.state!.waiting!;
      assert.equal(w.reason, "ErrImagePull");
      assert.match(w.message, /registry|no such host|pull access denied|not found|lookup/i);
      await waitFor(() => seen.filter((r) => r === "ErrImagePull").length >= 2, { message: "a retry failing again" });
      assert.deepEqual(seen.slice(0, 3), ["ErrImagePull", "ImagePullBackOff", "ErrImagePull"]);
      assert.match(waitingOf(uid)?.message ?? "", /./);

      // The runtime still starts other pods; one whose image is tagged later gets started by the retry.
      const other = await rt.startPod(makePod("fine", { containers: [sh("app", "sleep 1000")] }, node));
      assert.ok(other.containerStatuses[0]!.state!.running);
      const l = await rt.startPod(later);
      assert.equal(l.containerStatuses[0]!.state!.waiting!.reason, "ErrImagePull");
      await docker.getImage(LOCAL_IMAGES.busybox).tag({ repo: "choreo-test/appears", tag: node });
      await waitFor(() => rt.podStatus(later.metadata!.uid)?.containerStatuses[0]?.state?.running, { message: "started after the image appeared" });

      for (const p of rt.listPods()) await rt.stopPod(p, 0);
    } finally {
      await rt.close();
      await docker
        .getImage(tag)
        .remove()
        .catch(() => undefined);
      await cleanup(node, stateDir);
    }
  });

  it("honours Never (ErrImageNeverPull) and Always (a pull even when the image is present)", async () => {
    const node = testNode("policy");
    const { rt, stateDir } = await newRuntime(node, { pullBackoff: { initialMs: 200, maxMs: 400 } });
    try {
      const never = await rt.startPod(makePod("never", { containers: [{ name: "app", image: MISSING, imagePullPolicy: "Never" }] }, node));
      assert.deepEqual(never.containerStatuses[0]!.state!.waiting, {
        reason: "ErrImageNeverPull",
        message: `Container image "${MISSING}" is not present with pull policy of Never`,
      });
      const neverLocal = await rt.startPod(makePod("never-local", { containers: [sh("app", "sleep 1000", { imagePullPolicy: "Never" })] }, node));
      assert.ok(neverLocal.containerStatuses[0]!.state!.running);
      const always = await rt.startPod(makePod("always", { containers: [sh("app", "sleep 1000", { imagePullPolicy: "Always" })] }, node));
      assert.equal(always.containerStatuses[0]!.state!.waiting!.reason, "ErrImagePull", "no registry here: Always cannot pull");
      for (const p of rt.listPods()) await rt.stopPod(p, 0);
    } finally {
      await rt.close();
      await cleanup(node, stateDir);
    }
  });
});
