// test-tier: servers
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { securityOf } from "./container-spec.js";
import { cleanup, dockerUnavailable, makePod, newRuntime, sh, testNode } from "./test-support.js";

const skip = await dockerUnavailable();
/** CAP_NET_BIND_SERVICE alone, as /proc/PID/status prints a capability set. */
const NET_BIND_SERVICE = "0000000000000400";

describe("the docker options of a securityContext", () => {
  it("map user, groups, capabilities, read-only root, privileges and seccomp", () => {
    const pod = makePod(
      "p",
      {
        securityContext: { runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000], fsGroup: 2000, seccompProfile: { type: "Unconfined" } },
        containers: [
          sh("c", "true", {
            securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"], add: ["CAP_NET_BIND_SERVICE"] } },
          }),
        ],
      },
      "n",
    );
    assert.deepEqual(securityOf({ pod, container: pod.spec!.containers[0]! }), {
      User: "1000:3000",
      GroupAdd: ["4000", "2000"],
      ReadonlyRootfs: true,
      CapDrop: ["ALL", "NET_RAW"],
      CapAdd: ["NET_BIND_SERVICE"],
      SecurityOpt: ["no-new-privileges", "seccomp=unconfined"],
    });
    const group = makePod(
      "p",
      { securityContext: { runAsGroup: 5 }, containers: [sh("c", "true", { securityContext: { capabilities: { add: ["NET_RAW"] } } })] },
      "n",
    );
    assert.deepEqual(securityOf({ pod: group, container: group.spec!.containers[0]!, imageUser: "nobody" }), {
      User: "nobody:5",
      CapDrop: [],
      CapAdd: ["NET_RAW"],
    });
    const priv = makePod(
      "p",
      { containers: [sh("c", "true", { securityContext: { privileged: true, seccompProfile: { type: "Localhost", localhostProfile: "p.json" } } })] },
      "n",
    );
    assert.deepEqual(securityOf({ pod: priv, container: priv.spec!.containers[0]!, seccompProfile: '{"defaultAction":"SCMP_ACT_ALLOW"}' }), {
      Privileged: true,
      CapDrop: ["NET_RAW"],
      SecurityOpt: ['seccomp={"defaultAction":"SCMP_ACT_ALLOW"}'],
    });
  });
});

describe("DockerRuntime securityContext", { skip }, () => {
  it("runs containers as runAsUser/runAsGroup with supplemental groups and fsGroup, a read-only root, cut capabilities, no_new_privs and seccomp", async () => {
    const node = testNode("secctx");
    const { rt, stateDir } = await newRuntime(node);
    try {
      const pod = makePod(
        "secctx",
        {
          securityContext: { runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000], fsGroup: 2000 },
          volumes: [{ name: "data", emptyDir: {} }],
          containers: [
            sh("ids", "exec sleep 1000", { securityContext: { runAsNonRoot: true }, volumeMounts: [{ name: "data", mountPath: "/data" }] }),
            sh("ro", "exec sleep 1000", { securityContext: { readOnlyRootFilesystem: true }, volumeMounts: [{ name: "data", mountPath: "/data" }] }),
            sh("caps", "exec sleep 1000", {
              securityContext: {
                runAsUser: 0,
                allowPrivilegeEscalation: false,
                seccompProfile: { type: "RuntimeDefault" },
                capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] },
              },
            }),
            sh("unconfined", "exec sleep 1000", { securityContext: { seccompProfile: { type: "Unconfined" } } }),
          ],
        },
        node,
      );
      const uid = pod.metadata!.uid;
      const started = await rt.startPod(pod);
      assert.ok(
        started.containerStatuses.every((c) => c.state?.running),
        JSON.stringify(started.containerStatuses),
      );
      const exec = async (c: string, script: string): Promise<string> => {
        const r = await rt.exec(uid, c, ["sh", "-c", script], 10_000);
        assert.equal(r.exitCode, 0, `${c}: ${script}: ${r.output}`);
        return r.output;
      };
      assert.equal(await exec("ids", "id -u; id -g"), "1000\n3000\n");
      assert.deepEqual((await exec("ids", "id -G")).trim().split(" ").map(Number).sort(), [2000, 3000, 4000]);
      // What it writes to the emptyDir is the fsGroup's (setgid directory).
      assert.equal(await exec("ids", "touch /data/f && stat -c '%u %g' /data/f"), "1000 2000\n");
      assert.match(await exec("ids", "stat -c %A /data"), /^drwxrwsrwx/);

      const ro = await rt.exec(uid, "ro", ["touch", "/x"], 10_000);
      assert.notEqual(ro.exitCode, 0);
      assert.match(ro.output, /Read-only file system/);
      assert.equal(await exec("ro", "touch /data/g && echo ok"), "ok\n", "its volumes stay writable");

      const status = await exec("caps", "grep -E '^(CapEff|CapBnd|CapPrm|NoNewPrivs|Seccomp):' /proc/1/status /proc/self/status");
      for (const where of ["/proc/1/status", "/proc/self/status"]) {
        const field = (f: string): string | undefined => new RegExp(`^${where}:${f}:\\s+(\\S+)$`, "m").exec(status)?.[1];
        assert.equal(field("CapEff"), NET_BIND_SERVICE, status);
        assert.equal(field("CapBnd"), NET_BIND_SERVICE, status);
        assert.equal(field("NoNewPrivs"), "1", status);
        assert.equal(field("Seccomp"), "2", status);
      }
      assert.match(await exec("unconfined", "grep ^Seccomp: /proc/self/status"), /^Seccomp:\s+0$/m);
      await rt.stopPod({ uid, namespace: node, name: "secctx" }, 0);
    } finally {
      await rt.close();
      await cleanup(node, stateDir);
    }
  });

  it("keeps a runAsNonRoot container of a root image (and a missing Localhost profile) waiting with CreateContainerConfigError; a present Localhost profile applies", async () => {
    const node = testNode("nonroot");
    const { rt, stateDir } = await newRuntime(node, { pullBackoff: { initialMs: 200, maxMs: 400 } });
    try {
      const pod = makePod(
        "x",
        {
          containers: [
            sh("c", "exec sleep 1000", { securityContext: { runAsNonRoot: true } }),
            sh("local", "exec sleep 1000", { securityContext: { seccompProfile: { type: "Localhost", localhostProfile: "missing.json" } } }),
            sh("ok", "exec sleep 1000", { securityContext: { runAsNonRoot: true, runAsUser: 1000 } }),
            sh("profile", "exec sleep 1000", { securityContext: { seccompProfile: { type: "Localhost", localhostProfile: "profiles/no-mkdir.json" } } }),
          ],
        },
        node,
      );
      const uid = pod.metadata!.uid;
      // A Localhost profile present under <stateDir>/seccomp: everything allowed but mkdir.
      fs.mkdirSync(path.join(stateDir, "seccomp", "profiles"), { recursive: true });
      const profile = { defaultAction: "SCMP_ACT_ALLOW", syscalls: [{ names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO" }] };
      fs.writeFileSync(path.join(stateDir, "seccomp", "profiles", "no-mkdir.json"), JSON.stringify(profile));
      await rt.startPod(pod);
      const state = (c: string) => rt.podStatus(uid)?.containerStatuses.find((s) => s.name === c)?.state;
      const waiting = await waitFor(() => state("c")?.waiting, { message: "c waiting" });
      assert.equal(waiting.reason, "CreateContainerConfigError");
      assert.equal(waiting.message, `container has runAsNonRoot and image will run as root (pod: "x_${node}(${uid})", container: c)`);
      const local = await waitFor(() => state("local")?.waiting, { message: "local waiting" });
      assert.equal(local.reason, "CreateContainerConfigError");
      assert.match(local.message, /seccomp profile .*missing\.json/);
      await waitFor(() => state("ok")?.running, { message: "ok runs" });
      assert.equal(state("c")?.running, undefined, "never started");
      await waitFor(() => state("profile")?.running, { message: "profile runs" });
      const mkdir = await rt.exec(uid, "profile", ["mkdir", "/tmp/x"], 10_000);
      assert.notEqual(mkdir.exitCode, 0, "mkdir refused by the profile");
      assert.equal((await rt.exec(uid, "profile", ["touch", "/tmp/y"], 10_000)).exitCode, 0, "the rest allowed");
      assert.match((await rt.exec(uid, "profile", ["grep", "^Seccomp:", "/proc/self/status"], 10_000)).output, /^Seccomp:\s+2$/m);
      await rt.stopPod({ uid, namespace: node, name: "x" }, 0);
    } finally {
      await rt.close();
      await cleanup(node, stateDir);
    }
  });
});
