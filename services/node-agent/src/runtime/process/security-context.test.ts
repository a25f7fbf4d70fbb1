// test-tier: servers
import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import { BUSYBOX, rig, trackPids, waitStatus, type TestRig } from "./test-helpers.js";
import fs from "node:fs";

/** A capability set as /proc/PID/status prints it. */
const hex = (...caps: number[]): string =>
  caps
    .reduce((m, c) => m | (1n << BigInt(c)), 0n)
    .toString(16)
    .padStart(16, "0");
const NET_BIND_SERVICE = 10;
const NET_ADMIN = 12;

/** The confinement fields of a /proc/PID/status. */
function fields(status: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of status.matchAll(/^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):\s*(.*?)\s*$/gm)) out[m[1]!] = m[2]!;
  return out;
}

describe("ProcessRuntime securityContext", () => {
  let r: TestRig | undefined;
  afterEach(async () => {
    await r?.cleanup();
    r = undefined;
  });
  const sh = async (uid: string, c: string, script: string) => r!.rt.exec(uid, c, ["sh", "-c", script], 5000);
  const ok = async (uid: string, c: string, script: string): Promise<string> => {
    const res = await sh(uid, c, script);
    assert.equal(res.exitCode, 0, `${c}: ${script}: ${res.output}`);
    return res.output;
  };
  const container = (name: string, securityContext: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    name,
    image: BUSYBOX,
    command: ["sh", "-c", "exec sleep 1000"],
    securityContext,
    ...extra,
  });

  it("switches to runAsUser/runAsGroup with supplementalGroups and fsGroup; emptyDir files are the fsGroup's; a read-only root", async () => {
    r = await rig();
    const pod = r.pod("ids", {
      securityContext: { runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000], fsGroup: 2000 },
      volumes: [{ name: "data", emptyDir: {} }],
      containers: [
        container("ids", { runAsNonRoot: true }, { volumeMounts: [{ name: "data", mountPath: "/data" }] }),
        container("ro", { readOnlyRootFilesystem: true, runAsUser: 0 }, { volumeMounts: [{ name: "data", mountPath: "/data" }] }),
      ],
    });
    const uid = pod.metadata!.uid;
    const st = await r.rt.startPod(pod);
    assert.ok(
      st.containerStatuses.every((c) => c.state?.running),
      JSON.stringify(st.containerStatuses),
    );
    assert.equal(await ok(uid, "ids", "id -u; id -g"), "1000\n3000\n");
    assert.deepEqual((await ok(uid, "ids", "id -G")).trim().split(" ").map(Number).sort(), [2000, 3000, 4000]);
    // The command itself, seen from the host: every uid and gid switched, no capability left to a non-root process.
    const { mainPid } = await trackPids(r, uid, "ids");
    const main = fields(fs.readFileSync(`/proc/${mainPid}/status`, "utf8"));
    assert.equal(main.Uid, "1000\t1000\t1000\t1000");
    assert.equal(main.Gid, "3000\t3000\t3000\t3000");
    assert.equal(main.Groups, "2000 4000");
    assert.equal(main.CapEff, hex());
    assert.equal(main.CapPrm, hex());
    assert.equal(main.NoNewPrivs, "1");
    assert.equal(main.Seccomp, "2");
    assert.equal(await ok(uid, "ids", "touch /data/f && stat -c '%u %g' /data/f"), "1000 2000\n");
    assert.notEqual((await sh(uid, "ids", "touch /etc/x")).exitCode, 0, "not root: the image's /etc is root's");
    assert.match((await sh(uid, "ids", "nc -l -p 80")).output, /bind: Permission denied/, "no NET_BIND_SERVICE for a non-root process that does not add it");

    const ro = await sh(uid, "ro", "touch /x");
    assert.notEqual(ro.exitCode, 0);
    assert.match(ro.output, /Read-only file system/);
    assert.equal(await ok(uid, "ro", "touch /data/g && echo ok"), "ok\n", "its volumes stay writable");
    assert.equal(await ok(uid, "ro", "id -u"), "0\n");
  });

  it("cuts capabilities to drop ALL + add NET_BIND_SERVICE (root and non-root), keeps no_new_privs and seccomp, Unconfined drops the filter", async () => {
    r = await rig();
    const pod = r.pod("caps", {
      containers: [
        container("root", {
          capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] },
          allowPrivilegeEscalation: false,
          seccompProfile: { type: "RuntimeDefault" },
        }),
        container("user", { runAsUser: 1000, capabilities: { drop: ["ALL"], add: ["CAP_NET_BIND_SERVICE", "net_admin"] } }),
        container("unconfined", { seccompProfile: { type: "Unconfined" } }),
        container("priv", { privileged: true }),
      ],
    });
    const uid = pod.metadata!.uid;
    await r.rt.startPod(pod);
    const root = fields(await ok(uid, "root", "cat /proc/self/status"));
    assert.deepEqual(
      {
        CapEff: root.CapEff,
        CapPrm: root.CapPrm,
        CapBnd: root.CapBnd,
        CapInh: root.CapInh,
        CapAmb: root.CapAmb,
        NoNewPrivs: root.NoNewPrivs,
        Seccomp: root.Seccomp,
      },
      {
        CapEff: hex(NET_BIND_SERVICE),
        CapPrm: hex(NET_BIND_SERVICE),
        CapBnd: hex(NET_BIND_SERVICE),
        CapInh: hex(),
        CapAmb: hex(),
        NoNewPrivs: "1",
        Seccomp: "2",
      },
    );
    const user = fields(await ok(uid, "user", "cat /proc/self/status"));
    const both = hex(NET_BIND_SERVICE, NET_ADMIN);
    assert.deepEqual(
      { Uid: user.Uid, CapEff: user.CapEff, CapBnd: user.CapBnd, CapAmb: user.CapAmb },
      { Uid: "1000\t1000\t1000\t1000", CapEff: both, CapBnd: both, CapAmb: both },
      "a non-root process has exactly what capabilities.add grants",
    );
    // What the granted capability is for: a non-root process binds port 80.
    // busybox's timeout: 143 (its TERM); a refused bind would be nc's 1 at once.
    assert.match(await ok(uid, "user", "timeout 1 nc -l -p 80; echo $?"), /^(Terminated\n)?(124|143)\n$/, "nc listened on 80 until the timeout");
    assert.equal(fields(await ok(uid, "unconfined", "cat /proc/self/status")).Seccomp, "0");
    // privileged: every capability the host has, no filter, the host's devices.
    const priv = fields(await ok(uid, "priv", "cat /proc/self/status"));
    const host = fields(fs.readFileSync("/proc/self/status", "utf8"));
    assert.deepEqual({ CapEff: priv.CapEff, CapBnd: priv.CapBnd, Seccomp: priv.Seccomp }, { CapEff: host.CapBnd, CapBnd: host.CapBnd, Seccomp: "0" });
    assert.ok(fs.existsSync("/dev/kmsg"));
    assert.equal(await ok(uid, "priv", "test -c /dev/kmsg && echo host"), "host\n");
    assert.notEqual((await sh(uid, "root", "test -e /dev/kmsg")).exitCode, 0, "not without privileged");
  });

  it("keeps a runAsNonRoot container (the image runs as root) waiting with CreateContainerConfigError and the kubelet's message", async () => {
    r = await rig();
    const pod = r.pod("x", {
      containers: [
        container("c", { runAsNonRoot: true }),
        container("local", { seccompProfile: { type: "Localhost", localhostProfile: "p.json" } }),
        container("ok", {}),
      ],
    });
    const uid = pod.metadata!.uid;
    await r.rt.startPod(pod);
    const c = await waitStatus(r, uid, "c", (s) => s.state?.waiting !== undefined, "c waiting");
    assert.equal(c.state?.waiting?.reason, "CreateContainerConfigError");
    assert.equal(c.state?.waiting?.message, `container has runAsNonRoot and image will run as root (pod: "x_default(${uid})", container: c)`);
    const local = await waitStatus(r, uid, "local", (s) => s.state?.waiting !== undefined, "local waiting");
    assert.equal(local.state?.waiting?.reason, "CreateContainerConfigError");
    assert.match(local.state?.waiting?.message ?? "", /Localhost .*not supported by the process runtime/);
    await waitStatus(r, uid, "ok", (s) => s.state?.running !== undefined, "ok runs");
    await assert.rejects(r.rt.exec(uid, "c", ["true"], 1000), /not running/);
  });
});
