// test-tier: servers
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, it } from "node:test";
import { mountsBelow, unmountBelow } from "../safe-path.js";
import { BUSYBOX, rig, trackPids, waitStatus, type TestRig } from "./test-helpers.js";

// CVE-2017-1002101's attack, for real: a container of the pod swaps a
// subPath (or a hostPath component) for a symlink to `/`; the next run
// must not bind the host's root into a container.
describe("ProcessRuntime safe volume paths", () => {
  let r: TestRig | undefined;
  const extra: string[] = [];
  afterEach(async () => {
    try {
      await r?.cleanup();
    } finally {
      // A failed assertion may leave binds: `rm -r` of the state dir must not descend into them.
      if (r) await unmountBelow(r.stateDir);
      r = undefined;
      for (const p of extra.splice(0)) fs.rmSync(p, { recursive: true, force: true });
    }
  });

  it("refuses a subPath a sibling container replaced with a symlink to / (CreateContainerConfigError); the other container keeps running", async () => {
    r = await rig();
    const marker = `/tmp/choreo-escape-marker-${randomUUID()}`;
    fs.writeFileSync(marker, "host");
    extra.push(marker);
    const pod = r.pod("escape", {
      volumes: [{ name: "vol", emptyDir: {} }],
      containers: [
        { name: "a", image: BUSYBOX, command: ["sh", "-c", "exec sleep 300"], volumeMounts: [{ name: "vol", mountPath: "/vol" }] },
        { name: "b", image: BUSYBOX, command: ["sh", "-c", "exec sleep 300"], volumeMounts: [{ name: "vol", mountPath: "/sub", subPath: "x" }] },
      ],
    });
    const uid = pod.metadata!.uid;
    const st = await r.rt.startPod(pod);
    assert.ok(
      st.containerStatuses.every((c) => c.state?.running),
      "both run",
    );
    await trackPids(r, uid, "a");
    await trackPids(r, uid, "b");
    assert.equal((await r.rt.exec(uid, "b", ["sh", "-c", "echo from-b > /sub/f"], 5000)).exitCode, 0);
    assert.equal((await r.rt.exec(uid, "a", ["cat", "/vol/x/f"], 5000)).output, "from-b\n");

    const swap = await r.rt.exec(uid, "a", ["sh", "-c", "rm -rf /vol/x && ln -sfn / /vol/x && ls -l /vol/x"], 5000);
    assert.equal(swap.exitCode, 0, swap.output);
    const before = await r.rt.exec(uid, "b", ["sh", "-c", `test -e /sub${marker} && echo ESCAPED; ls /sub`], 5000);
    assert.doesNotMatch(before.output, /ESCAPED/);

    await r.rt.killContainer(uid, "b", 0);
    await r.rt.restartContainer(uid, "b");
    const b = await waitStatus(r, uid, "b", (s) => s.state?.waiting !== undefined, "b waiting");
    assert.equal(b.state?.waiting?.reason, "CreateContainerConfigError");
    assert.match(b.state?.waiting?.message ?? "", /failed to prepare subPath for volumeMount "vol" of container "b": .*\/x: x is a symbolic link/);
    assert.equal(b.restartCount, 1);
    assert.ok(b.lastState?.terminated, "the run before is lastState");
    await assert.rejects(r.rt.exec(uid, "b", ["true"], 1000), /not running/);
    // The poll retries it (back-off 1 s, then 2 s): still refused, and `a` runs on.
    await new Promise((res) => setTimeout(res, 1500));
    const now = r.rt.podStatus(uid)!.containerStatuses;
    assert.equal(now.find((c) => c.name === "b")?.state?.waiting?.reason, "CreateContainerConfigError");
    assert.ok(now.find((c) => c.name === "a")?.state?.running, "a keeps running");
    const podDir = path.join(r.stateDir, "pods", uid);
    assert.deepEqual(mountsBelow(path.join(podDir, ".volume-subpaths")), [], "no bind left for the refused container");

    // The path fixed: the retry starts it, on its own.
    assert.equal((await r.rt.exec(uid, "a", ["sh", "-c", "rm /vol/x && mkdir /vol/x && echo again > /vol/x/f"], 5000)).exitCode, 0);
    await waitStatus(r, uid, "b", (s) => s.state?.running !== undefined, "b running after the fix");
    await trackPids(r, uid, "b");
    const after = await r.rt.exec(uid, "b", ["sh", "-c", `test -e /sub${marker} && echo ESCAPED; cat /sub/f`], 5000);
    assert.equal(after.output, "again\n");
    assert.equal(fs.readFileSync(marker, "utf8"), "host");
  });

  it("refuses a hostPath through a symlink under an allowed directory; a plain one binds, read-only when asked, with a file subPath", async () => {
    r = await rig();
    const hostDir = fs.mkdtempSync(path.join(os.tmpdir(), "choreo-hostpath-"));
    extra.push(hostDir);
    fs.mkdirSync(path.join(hostDir, "plain"));
    fs.writeFileSync(path.join(hostDir, "plain/hello"), "from-host\n");
    fs.symlinkSync("/", path.join(hostDir, "link"));
    const pod = r.pod("hp", {
      volumes: [
        { name: "bad", hostPath: { path: path.join(hostDir, "link/etc") } },
        { name: "good", hostPath: { path: path.join(hostDir, "plain") } },
      ],
      containers: [
        { name: "bad", image: BUSYBOX, command: ["sh", "-c", "exec sleep 300"], volumeMounts: [{ name: "bad", mountPath: "/h" }] },
        {
          name: "good",
          image: BUSYBOX,
          command: ["sh", "-c", "exec sleep 300"],
          volumeMounts: [
            { name: "good", mountPath: "/h", readOnly: true },
            { name: "good", mountPath: "/f", subPath: "hello" },
          ],
        },
      ],
    });
    const uid = pod.metadata!.uid;
    const st = (await r.rt.startPod(pod)).containerStatuses;
    const bad = st.find((c) => c.name === "bad")!.state?.waiting;
    assert.equal(bad?.reason, "CreateContainerConfigError");
    assert.match(bad?.message ?? "", /failed to prepare hostPath for volumeMount "bad" of container "bad": .*link is a symbolic link/);
    assert.ok(st.find((c) => c.name === "good")?.state?.running, "the other container runs");
    await trackPids(r, uid, "good");
    const good = await r.rt.exec(uid, "good", ["sh", "-c", "cat /h/hello /f; { echo x > /h/nope; } 2>/dev/null || echo read-only"], 5000);
    assert.equal(good.output, "from-host\nfrom-host\nread-only\n");
    await r.rt.stopPod({ uid, namespace: "default", name: "hp" }, 0);
    assert.deepEqual(mountsBelow(r.stateDir), [], "no mounts left");
    assert.equal(fs.readFileSync(path.join(hostDir, "plain/hello"), "utf8"), "from-host\n", "removing the pod dir left the host's files alone");
  });
});
