// test-tier: servers
import assert from "node:assert/strict";
import fs from "node:fs";
import { afterEach, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { Cgroups } from "./cgroups.js";
import { EXEC_TIMEOUT_EXIT } from "./exec.js";
import { BUSYBOX, logText, rig, trackPids, waitStatus, type TestRig } from "./test-helpers.js";

describe("ProcessRuntime pods", () => {
  let r: TestRig | undefined;
  afterEach(async () => {
    await r?.cleanup();
    r = undefined;
  });

  it("sidecar: a writer and a reader share an emptyDir, the pod's IPC and UTS namespaces, and the pod's IP", async () => {
    r = await rig();
    const pod = r.pod("sidecar", {
      volumes: [{ name: "shared", emptyDir: {} }],
      containers: [
        {
          name: "writer",
          image: BUSYBOX,
          command: ["sh", "-c", "echo hello-from-writer > /data/msg; exec sleep 300"],
          volumeMounts: [{ name: "shared", mountPath: "/data" }],
        },
        {
          name: "reader",
          image: BUSYBOX,
          command: ["sh", "-c", "until [ -f /in/msg ]; do sleep 0.1; done; cat /in/msg; exec sleep 300"],
          volumeMounts: [{ name: "shared", mountPath: "/in", readOnly: true }],
        },
      ],
    });
    const uid = pod.metadata!.uid;
    const st = await r.rt.startPod(pod);
    assert.match(st.podIp, /^10\.231\./);
    assert.deepEqual(
      st.containerStatuses.map((c) => [c.name, Boolean(c.state?.running)]),
      [
        ["writer", true],
        ["reader", true],
      ],
    );
    await trackPids(r, uid, "writer");
    await trackPids(r, uid, "reader");
    await waitFor(async () => (await logText(r!, uid, { container: "reader" })).includes("hello-from-writer"), { message: "reader saw the writer's file" });
    const ns = async (c: string) =>
      (await r!.rt.exec(uid, c, ["sh", "-c", "for n in ipc uts net pid; do readlink /proc/self/ns/$n; done; hostname"], 5000)).output;
    const [w, rd] = [(await ns("writer")).split("\n"), (await ns("reader")).split("\n")];
    assert.deepEqual(w.slice(0, 3), rd.slice(0, 3), "ipc, uts and net namespaces are the pod's");
    assert.notEqual(w[3], rd[3], "each container has its own pid namespace");
    assert.notEqual(w[0], fs.readlinkSync("/proc/self/ns/ipc"));
    assert.equal(w[4], "sidecar");
    const ro = await r.rt.exec(uid, "reader", ["sh", "-c", "echo x > /in/other"], 5000);
    assert.notEqual(ro.exitCode, 0, "a readOnly mount refuses writes");
    // No container mount namespace keeps pods' namespace files (they would keep deleted pods' namespaces alive).
    const { initPid } = await trackPids(r, uid, "reader");
    assert.doesNotMatch(fs.readFileSync(`/proc/${initPid}/mountinfo`, "utf8"), / - nsfs /);
  });

  it("ambassador: one container reaches the other's server on localhost", async () => {
    r = await rig();
    const pod = r.pod("ambassador", {
      containers: [
        { name: "proxy", image: BUSYBOX, command: ["sh", "-c", "mkdir -p /srv && echo ambassador-ok > /srv/index.html && exec httpd -f -p 8080 -h /srv"] },
        { name: "app", image: BUSYBOX, command: ["sh", "-c", "until wget -q -O - http://localhost:8080/; do sleep 0.1; done; exec sleep 300"] },
      ],
    });
    const uid = pod.metadata!.uid;
    await r.rt.startPod(pod);
    await trackPids(r, uid, "proxy");
    await trackPids(r, uid, "app");
    await waitFor(async () => (await logText(r!, uid, { container: "app" })).includes("ambassador-ok"), { message: "app got the proxy's page" });
  });

  it("the command's environment is the spec's and the defaults, nothing of the agent's; names that are no shell names too", async () => {
    r = await rig();
    process.env["CHOREO_AGENT_SECRET"] = "must-not-leak";
    try {
      const pod = r.pod("env", {
        containers: [
          { name: "plain", image: BUSYBOX, command: ["env"], env: [{ name: "GREETING", value: "it's $HOME" }] },
          {
            name: "dotted",
            image: BUSYBOX,
            command: ["env"],
            env: [
              { name: "my.setting", value: "a b" },
              { name: "X", value: "1" },
            ],
          },
        ],
        restartPolicy: "Never",
      });
      const uid = pod.metadata!.uid;
      await r.rt.startPod(pod);
      for (const c of ["plain", "dotted"]) await waitStatus(r, uid, c, (s) => s.state?.terminated?.exitCode === 0, `${c} ran`);
      // env itself, not a shell: a shell would add PWD and SHLVL, and busybox's drops names like my.setting.
      const names = (text: string) =>
        text
          .trim()
          .split("\n")
          .map((l) => l.split("=")[0])
          .sort();
      const plain = await logText(r, uid, { container: "plain" });
      assert.deepEqual(names(plain), ["GREETING", "HOME", "HOSTNAME", "PATH"]);
      assert.match(plain, /^GREETING=it's \$HOME$/m, "values reach the command unexpanded");
      const dotted = await logText(r, uid, { container: "dotted" });
      assert.deepEqual(names(dotted), ["HOME", "HOSTNAME", "PATH", "X", "my.setting"]);
      assert.match(dotted, /^my\.setting=a b$/m);
      assert.doesNotMatch(plain + dotted, /CHOREO_AGENT_SECRET|OLDPWD/);
    } finally {
      delete process.env["CHOREO_AGENT_SECRET"];
    }
  });

  it("exec runs in the container's root with its env, and kills a command that overruns its timeout", async () => {
    r = await rig();
    const pod = r.pod("exec", {
      containers: [
        {
          name: "c",
          image: BUSYBOX,
          workingDir: "/work",
          command: ["sleep", "300"],
          resources: { limits: { cpu: "250m", memory: "64Mi" } },
          env: [
            { name: "GREETING", value: "hi" },
            { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
          ],
        },
      ],
    });
    const uid = pod.metadata!.uid;
    const st = await r.rt.startPod(pod);
    await trackPids(r, uid, "c");
    const cg = new Cgroups();
    const [mem, cpu] = cg.containerDirs(r.node, uid, "c");
    assert.deepEqual(cg.procs(mem!), cg.procs(cpu ?? mem!), "the container's processes are in its cgroups");
    assert.equal(cg.procs(mem!).length, 2, "PID 1 and the command");
    if (!cg.v2) {
      assert.equal(fs.readFileSync(`${mem}/memory.limit_in_bytes`, "utf8").trim(), String(64 * 1024 * 1024));
      assert.equal(fs.readFileSync(`${cpu}/cpu.cfs_quota_us`, "utf8").trim(), "25000");
    }
    const res = await r.rt.exec(uid, "c", ["sh", "-c", "echo $GREETING $POD_IP; pwd; ls /bin/busybox; exit 3"], 5000);
    assert.deepEqual(res, { exitCode: 3, output: `hi ${st.podIp}\n/work\n/bin/busybox\n` });
    const slow = await r.rt.exec(uid, "c", ["sleep", "60"], 300);
    assert.equal(slow.exitCode, EXEC_TIMEOUT_EXIT);
    const left = await r.rt.exec(uid, "c", ["sh", "-c", "ps | grep -c '[s]leep 60' || true"], 5000);
    assert.equal(left.output.trim(), "0", "the timed-out sleep is gone");
  });

  it("runs on the host's filesystem when the image has no rootfs in the store", async () => {
    r = await rig();
    const pod = r.pod("host-fs", {
      containers: [{ name: "c", image: "debian:bookworm", command: ["sh", "-c", "cat /etc/debian_version; ls /root 2>&1 | head -1; ls /; exec sleep 300"] }],
    });
    const uid = pod.metadata!.uid;
    const st = await r.rt.startPod(pod);
    assert.equal(st.containerStatuses[0]!.imageId, "process://host");
    await trackPids(r, uid, "c");
    const log = await waitFor(async () => {
      const t = await logText(r!, uid, { container: "c" });
      return t.includes("usr") ? t : undefined;
    });
    assert.equal(log.split("\n")[0], fs.readFileSync("/etc/debian_version", "utf8").trim());
    assert.match(log, /No such file or directory/, "the host's /root is not in the container");
    const w = await r.rt.exec(uid, "c", ["sh", "-c", "touch /usr/x"], 5000);
    assert.notEqual(w.exitCode, 0, "host dirs are read-only");
  });

  it("a hostNetwork pod has the node's IP and network namespace, and its own IPC and UTS", async () => {
    r = await rig({ hostIp: "192.0.2.10" });
    const pod = r.pod("hostnet", { hostNetwork: true, containers: [{ name: "c", image: BUSYBOX, command: ["sleep", "300"] }] });
    const uid = pod.metadata!.uid;
    const st = await r.rt.startPod(pod);
    assert.equal(st.podIp, "192.0.2.10");
    await trackPids(r, uid, "c");
    const ns = (await r.rt.exec(uid, "c", ["sh", "-c", "readlink /proc/self/ns/net; readlink /proc/self/ns/uts"], 5000)).output.split("\n");
    assert.equal(ns[0], fs.readlinkSync("/proc/self/ns/net"));
    assert.notEqual(ns[1], fs.readlinkSync("/proc/self/ns/uts"));
  });

  it("stopPod gives SIGTERM to the command (PID 1 forwards it) and leaves no processes, netns, mounts, cgroups or files", async () => {
    r = await rig();
    const pod = r.pod("graceful", {
      containers: [{ name: "c", image: BUSYBOX, command: ["sh", "-c", "trap 'echo got-term; exit 0' TERM; echo trapping; while true; do sleep 0.1; done"] }],
    });
    const uid = pod.metadata!.uid;
    await r.rt.startPod(pod);
    await trackPids(r, uid, "c");
    // A SIGTERM before the shell has set its trap ends it with 143: wait until it says the trap is set.
    await waitFor(async () => /trapping/.test(await logText(r!, uid, { container: "c" })), { message: "the trap set" });
    const changes: string[] = [];
    r.rt.onChange((p) => changes.push(p.uid));
    await r.rt.killContainer(uid, "c", 30);
    const s = await waitStatus(r, uid, "c", (c) => Boolean(c.state?.terminated));
    assert.equal(s.state?.terminated?.exitCode, 0);
    assert.equal(s.state?.terminated?.reason, "Completed");
    assert.match(await logText(r, uid, { container: "c" }), /got-term/);
    assert.deepEqual(changes, [uid]);
    await r.rt.stopPod({ uid, namespace: "default", name: "graceful" }, 0);
    assert.equal(r.rt.podStatus(uid), undefined);
    assert.deepEqual(r.rt.listPods(), []);
  });
});
