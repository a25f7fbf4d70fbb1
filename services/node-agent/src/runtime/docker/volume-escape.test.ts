// test-tier: servers
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { mountsBelow, unmountBelow } from "../safe-path.js";
import { cleanup, dockerUnavailable, makePod, newRuntime, sh, testNode } from "./test-support.js";

const skip = await dockerUnavailable();

// CVE-2017-1002101's attack, for real: a container of the pod swaps a
// subPath (or a hostPath component) for a symlink to `/`; the next start
// must not bind the host's root into a container.
describe("DockerRuntime safe volume paths", { skip }, () => {
  it("refuses a subPath a sibling container replaced with a symlink to / (CreateContainerConfigError); the other container keeps running", async () => {
    const node = testNode("escape");
    const { rt, stateDir } = await newRuntime(node, { pullBackoff: { initialMs: 200, maxMs: 400 } });
    const marker = `/tmp/choreo-escape-marker-${randomUUID()}`;
    fs.writeFileSync(marker, "host");
    try {
      const pod = makePod(
        "escape",
        {
          volumes: [{ name: "vol", emptyDir: {} }],
          containers: [
            sh("a", "exec sleep 1000", { volumeMounts: [{ name: "vol", mountPath: "/vol" }] }),
            sh("b", "exec sleep 1000", { volumeMounts: [{ name: "vol", mountPath: "/sub", subPath: "x" }] }),
          ],
        },
        node,
      );
      const uid = pod.metadata!.uid;
      const started = await rt.startPod(pod);
      assert.ok(
        started.containerStatuses.every((c) => c.state?.running),
        "both run",
      );
      // The subPath works as before: made in the volume, shared with `a`.
      assert.equal((await rt.exec(uid, "b", ["sh", "-c", "echo from-b > /sub/f"], 5000)).exitCode, 0);
      assert.equal((await rt.exec(uid, "a", ["cat", "/vol/x/f"], 5000)).output, "from-b\n");

      const swap = await rt.exec(uid, "a", ["sh", "-c", "rm -rf /vol/x && ln -sfn / /vol/x && ls /vol/x/tmp >/dev/null"], 5000);
      assert.equal(swap.exitCode, 0, swap.output);
      // The running `b` still has its directory, never the host's root.
      const before = await rt.exec(uid, "b", ["sh", "-c", `test -e /sub${marker} && echo ESCAPED; ls /sub`], 5000);
      assert.doesNotMatch(before.output, /ESCAPED/);

      await rt.killContainer(uid, "b", 0);
      await rt.restartContainer(uid, "b");
      const waiting = await waitFor(() => rt.podStatus(uid)?.containerStatuses.find((c) => c.name === "b")?.state?.waiting, { message: "b waiting" });
      assert.equal(waiting.reason, "CreateContainerConfigError");
      assert.match(waiting.message, /failed to prepare subPath for volumeMount "vol" of container "b": .*\/x: .*symbolic link/);
      // Still refused on the launcher's retries, and `a` runs on.
      await new Promise((r) => setTimeout(r, 700));
      const st = rt.podStatus(uid)!.containerStatuses;
      assert.equal(st.find((c) => c.name === "b")?.state?.waiting?.reason, "CreateContainerConfigError");
      assert.ok(st.find((c) => c.name === "a")?.state?.running, "a keeps running");
      assert.equal(st.find((c) => c.name === "b")?.restartCount, 1);
      const podDir = path.join(stateDir, "pods", uid);
      assert.deepEqual(mountsBelow(path.join(podDir, ".volume-subpaths")), [], "no bind left for the refused container");

      await rt.stopPod({ uid, namespace: node, name: "escape" }, 0);
      assert.deepEqual(mountsBelow(stateDir), [], "no mounts left");
      assert.equal(fs.existsSync(podDir), false);
      assert.equal(fs.readFileSync(marker, "utf8"), "host", "the host's file is untouched");
    } finally {
      await rt.close();
      // A failed assertion leaves the pod's binds: `rm -r` must not descend into them.
      await unmountBelow(stateDir);
      await cleanup(node, stateDir);
      fs.rmSync(marker, { force: true });
    }
  });

  it("refuses a hostPath through a symlink under an allowed directory, binds a plain one read-only, and unbinds on stop", async () => {
    const node = testNode("hostpath");
    const { rt, stateDir } = await newRuntime(node, { pullBackoff: { initialMs: 200, maxMs: 400 } });
    const hostDir = fs.mkdtempSync(path.join(os.tmpdir(), "choreo-hostpath-"));
    fs.mkdirSync(path.join(hostDir, "plain"));
    fs.writeFileSync(path.join(hostDir, "plain/hello"), "from-host\n");
    fs.symlinkSync("/", path.join(hostDir, "link"));
    try {
      const pod = makePod(
        "hp",
        {
          volumes: [
            { name: "bad", hostPath: { path: path.join(hostDir, "link/etc") } },
            { name: "good", hostPath: { path: path.join(hostDir, "plain") } },
          ],
          containers: [
            sh("bad", "exec sleep 1000", { volumeMounts: [{ name: "bad", mountPath: "/h" }] }),
            sh("good", "exec sleep 1000", {
              volumeMounts: [
                { name: "good", mountPath: "/h", readOnly: true },
                { name: "good", mountPath: "/f", subPath: "hello" },
              ],
            }),
          ],
        },
        node,
      );
      const uid = pod.metadata!.uid;
      const st = (await rt.startPod(pod)).containerStatuses;
      const bad = st.find((c) => c.name === "bad")!.state?.waiting;
      assert.equal(bad?.reason, "CreateContainerConfigError");
      assert.match(bad?.message ?? "", /failed to prepare hostPath for volumeMount "bad" of container "bad": .*link is a symbolic link/);
      assert.ok(st.find((c) => c.name === "good")?.state?.running, "the other container runs");
      // The shell's complaint silenced: stderr and stdout frames of an exec may interleave mid-line (ci-42).
      const good = await rt.exec(uid, "good", ["sh", "-c", "cat /h/hello /f; { echo x > /h/nope; } 2>/dev/null || echo read-only"], 5000);
      assert.equal(good.output, "from-host\nfrom-host\nread-only\n");
      await rt.stopPod({ uid, namespace: node, name: "hp" }, 0);
      assert.deepEqual(mountsBelow(stateDir), [], "no mounts left");
      assert.equal(fs.readFileSync(path.join(hostDir, "plain/hello"), "utf8"), "from-host\n", "removing the pod dir left the host's files alone");
    } finally {
      await rt.close();
      // A failed assertion leaves the pod's binds: `rm -r` must not descend into them.
      await unmountBelow(stateDir);
      await cleanup(node, stateDir);
      fs.rmSync(hostDir, { recursive: true, force: true });
    }
  });
});
