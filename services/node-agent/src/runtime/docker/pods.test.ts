// test-tier: servers
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { LABELS } from "../../net/types.js";
import type { RuntimePod } from "../runtime.js";
import { cleanup, collect, docker, dockerUnavailable, makePod, newRuntime, nodeContainers, sh, testNode } from "./test-support.js";

const skip = await dockerUnavailable();

describe("DockerRuntime pods", { skip }, () => {
  it("runs a pod whose containers share an emptyDir and localhost, then stopPod leaves nothing", async () => {
    const node = testNode("share");
    const { rt, net, stateDir } = await newRuntime(node);
    const hostDir = await mkdtemp(path.join(os.tmpdir(), "choreo-hostpath-"));
    await writeFile(path.join(hostDir, "hello"), "from-host\n");
    try {
      const pod = makePod(
        "sidecar",
        {
          volumes: [
            { name: "shared", emptyDir: {} },
            { name: "mem", emptyDir: { medium: "Memory", sizeLimit: "8Mi" } },
            { name: "host", hostPath: { path: hostDir } },
          ],
          containers: [
            sh("writer", "echo hello-from-writer > /data/msg; mkdir -p /www; echo served > /www/index.html; exec httpd -f -p 8080 -h /www", {
              volumeMounts: [{ name: "shared", mountPath: "/data" }],
            }),
            sh("reader", "while true; do cat /data/msg 2>/dev/null && wget -q -O - http://localhost:8080/ 2>/dev/null; sleep 0.2; done", {
              volumeMounts: [
                { name: "shared", mountPath: "/data", readOnly: true },
                { name: "mem", mountPath: "/mem" },
                { name: "host", mountPath: "/host", readOnly: true },
              ],
              env: [
                { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
                { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
              ],
            }),
          ],
        },
        node,
      );
      const uid = pod.metadata!.uid;
      const status = await rt.startPod(pod);
      assert.match(status.podIp, /^10\.99\.0\.\d+$/);
      assert.equal(net.attached.get(uid), status.podIp);
      for (const cs of status.containerStatuses) {
        assert.ok(cs.state?.running, `${cs.name} running`);
        assert.match(cs.containerId, /^docker:\/\/[0-9a-f]{64}$/);
        assert.equal(cs.ready, true);
      }
      const out = await waitFor(
        async () => {
          const text = await collect(rt.logs(uid, { container: "reader", follow: false, timestamps: false, previous: false }, new AbortController().signal));
          return text.includes("hello-from-writer") && text.includes("served") ? text : undefined;
        },
        { message: "reader sees the file and the server" },
      );
      assert.ok(out);

      const env = await rt.exec(uid, "reader", ["sh", "-c", "echo $POD_NAME $POD_IP; cat /etc/hosts /etc/resolv.conf; hostname"], 5000);
      assert.equal(env.exitCode, 0);
      assert.match(env.output, new RegExp(`^sidecar ${status.podIp.replace(/\./g, "\\.")}\n`));
      assert.match(env.output, new RegExp(`search ${node}\\.svc\\.cluster\\.local svc\\.cluster\\.local cluster\\.local`));
      assert.match(env.output, new RegExp(`${status.podIp.replace(/\./g, "\\.")}\tsidecar`));
      assert.match(env.output, /\nsidecar\n$/);
      const ro = await rt.exec(uid, "reader", ["sh", "-c", "echo x > /data/nope"], 5000);
      assert.notEqual(ro.exitCode, 0, "read-only mount");
      const mounts = await rt.exec(uid, "reader", ["sh", "-c", "grep ' /mem ' /proc/mounts; cat /host/hello; echo x > /mem/ok && echo mem-writable"], 5000);
      assert.match(mounts.output, /^tmpfs \/mem tmpfs rw.*size=8192k/m, "medium Memory is a tmpfs of sizeLimit");
      assert.match(mounts.output, /from-host\nmem-writable\n$/);
      const podDir = path.join(stateDir, "pods", uid);
      assert.match(await readFile("/proc/self/mounts", "utf8"), new RegExp(`${podDir}/volumes/mem tmpfs`));

      const names = (await nodeContainers(node)).map((c) => c.Names[0]).sort();
      const u8 = uid.slice(0, 8);
      assert.deepEqual(names, [`/choreo_${node}_sidecar_POD_${u8}`, `/choreo_${node}_sidecar_reader_${u8}_0`, `/choreo_${node}_sidecar_writer_${u8}_0`]);
      const labels = (await nodeContainers(node)).map((c) => c.Labels);
      for (const l of labels) assert.equal(l[LABELS.podUid], uid);

      await rt.stopPod({ uid, namespace: node, name: "sidecar" }, 5);
      assert.deepEqual(await nodeContainers(node), []);
      assert.equal(rt.podStatus(uid), undefined);
      assert.equal(net.attached.size, 0);
      assert.doesNotMatch(await readFile("/proc/self/mounts", "utf8"), new RegExp(podDir), "tmpfs unmounted");
      await assert.rejects(stat(podDir), "pod directory removed");
    } finally {
      await rt.close();
      await rm(hostDir, { recursive: true, force: true });
      await cleanup(node, stateDir);
    }
  });

  it("reports OOMKilled when a container allocates past its memory limit", async () => {
    const node = testNode("oom");
    const { rt, stateDir } = await newRuntime(node);
    try {
      const pod = makePod(
        "oom",
        {
          containers: [sh("app", "x=aaaaaaaa; while :; do x=$x$x; done", { resources: { limits: { memory: "20Mi" } } })],
        },
        node,
      );
      const uid = pod.metadata!.uid;
      const changed: RuntimePod[] = [];
      rt.onChange((p) => changed.push(p));
      await rt.startPod(pod);
      // docker's oom event may come just after the exit: the status settles on OOMKilled.
      const term = await waitFor(
        () => {
          const t = rt.podStatus(uid)?.containerStatuses[0]?.state?.terminated;
          return t?.reason === "OOMKilled" ? t : undefined;
        },
        { message: "terminated with OOMKilled", timeoutMs: 30_000 },
      );
      assert.equal(term.exitCode, 137);
      assert.ok(
        changed.some((p) => p.uid === uid),
        "listener called",
      );
      const info = await docker.getContainer(term.containerId.replace("docker://", "")).inspect();
      assert.equal(info.HostConfig.Memory, 20 * 1024 * 1024);
      await rt.stopPod({ uid, namespace: node, name: "oom" }, 0);
    } finally {
      await rt.close();
      await cleanup(node, stateDir);
    }
  });
  it("runs a hostNetwork pod in the node's network namespace with the node's IP, attaching nothing", async () => {
    const node = testNode("hostnet");
    const { rt, net, stateDir } = await newRuntime(node, { hostIp: "172.16.9.9" });
    try {
      const pod = makePod("hostnet", { hostNetwork: true, containers: [sh("app", "exec sleep 1000")] }, node);
      const uid = pod.metadata!.uid;
      const status = await rt.startPod(pod);
      assert.equal(status.podIp, "172.16.9.9");
      assert.ok(status.containerStatuses[0]!.state?.running);
      assert.equal(net.attached.size, 0);
      const links = await rt.exec(uid, "app", ["cat", "/proc/net/dev"], 5000);
      assert.match(links.output, /docker0:/, "the host's interfaces");
      await rt.stopPod({ uid, namespace: node, name: "hostnet" }, 0);
      assert.deepEqual(await nodeContainers(node), []);
    } finally {
      await rt.close();
      await cleanup(node, stateDir);
    }
  });
});
