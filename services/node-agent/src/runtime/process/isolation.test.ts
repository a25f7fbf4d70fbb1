// test-tier: servers
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, it } from "node:test";
import { hostileEnv, hostileStrings, nulList } from "../hostile-strings.js";
import { BUSYBOX, rig, trackPids, type TestRig } from "./test-helpers.js";

/** Docker's default capabilities less NET_RAW and MKNOD, as /proc/PID/status prints a set. */
const KEPT = [0, 1, 3, 4, 5, 6, 7, 8, 10, 18, 29, 31]; // CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP NET_BIND_SERVICE SYS_CHROOT AUDIT_WRITE SETFCAP
const KEPT_HEX = KEPT.reduce((m, c) => m | (1n << BigInt(c)), 0n)
  .toString(16)
  .padStart(16, "0");
const CONFINED = {
  CapInh: "0000000000000000",
  CapPrm: KEPT_HEX,
  CapEff: KEPT_HEX,
  CapBnd: KEPT_HEX,
  CapAmb: "0000000000000000",
  NoNewPrivs: "1",
  Seccomp: "2",
};
const MINIMAL_DEV = ["fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout", "tty", "urandom", "zero"];

/** The confinement fields of a /proc/PID/status. */
function confinement(status: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of status.split("\n")) {
    const m = /^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):\s*(\S+)$/.exec(l);
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

describe("ProcessRuntime isolation", () => {
  let r: TestRig | undefined;
  const markers: string[] = [];
  afterEach(async () => {
    await r?.cleanup();
    r = undefined;
    for (const m of markers.splice(0)) fs.rmSync(m, { force: true });
  });

  /** Runs `script` in the container with sh -c; its exit code and output. */
  const sh = async (uid: string, c: string, script: string) => r!.rt.exec(uid, c, ["sh", "-c", script], 5000);

  /** The checks every container passes, on an image root or the host's filesystem. */
  async function assertConfined(uid: string, c: string, marker: string): Promise<void> {
    const { mainPid } = await trackPids(r!, uid, c);
    assert.deepEqual(confinement(fs.readFileSync(`/proc/${mainPid}/status`, "utf8")), CONFINED, "the command, seen from the host");
    assert.deepEqual(confinement((await sh(uid, c, "cat /proc/self/status")).output), CONFINED, "an exec, seen from inside");
    assert.notEqual((await sh(uid, c, "mount -t tmpfs x /mnt")).exitCode, 0, "mount is refused");
    assert.notEqual((await sh(uid, c, "unshare -U -m true")).exitCode, 0, "no new namespaces (seccomp)");
    assert.notEqual((await sh(uid, c, "mknod /tmp/sda b 8 0")).exitCode, 0, "no device nodes (no CAP_MKNOD)");
    assert.deepEqual((await sh(uid, c, "ls /dev")).output.trim().split("\n").sort(), MINIMAL_DEV, "the minimal /dev: no sda, mem, kmsg");
    // Docker's masked files and dirs that this kernel has (this VM's has no /proc/kcore): empty inside.
    const masked = ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/acpi", "/proc/scsi"].filter((p) => fs.existsSync(p));
    assert.ok(masked.includes("/proc/keys"));
    const sizes = await sh(uid, c, masked.map((p) => (fs.statSync(p).isDirectory() ? `ls -A ${p} | wc -l` : `wc -c < ${p}`)).join("; "));
    assert.equal(sizes.output, "0\n".repeat(masked.length), `masked: ${masked.join(" ")}`);
    assert.notEqual((await sh(uid, c, "echo 1 > /proc/sys/vm/drop_caches")).exitCode, 0, "/proc/sys is read-only");
    assert.notEqual((await sh(uid, c, "echo b > /proc/sysrq-trigger")).exitCode, 0, "/proc/sysrq-trigger is read-only");
    // PID 1 (the init shell) keeps its capabilities, so the kernel's ptrace check keeps its /proc entries closed.
    assert.notEqual((await sh(uid, c, "ls /proc/1/root/")).exitCode, 0, "PID 1's root is closed");
    assert.notEqual((await sh(uid, c, "cat /proc/1/environ")).exitCode, 0, "PID 1's environ is closed");
    const m = path.basename(marker);
    const probe = `for p in /tmp/${m} /../../tmp/${m} /proc/self/root/../../tmp/${m} /proc/1/root/tmp/${m} /proc/1/cwd/tmp/${m}; do [ -e "$p" ] && echo "found $p"; done; cd /; cd ../../..; pwd; ls -a | grep -c oldroot`;
    assert.equal((await sh(uid, c, probe)).output, "/\n0\n", "the host's marker is nowhere in reach, `..` of / is /");
    // The container's mount table: nothing on the host's root file system, no old root left (pivot_root, detached).
    const hostRootDev = fs
      .readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .map((l) => l.split(" "))
      .find((f) => f[4] === "/")?.[2];
    const inside = (await sh(uid, c, "cat /proc/self/mountinfo")).output
      .trim()
      .split("\n")
      .map((l) => l.split(" "));
    assert.deepEqual(
      inside.filter((f) => f[2] === hostRootDev && f[4] === "/"),
      [],
      "the root is not the host's",
    );
    assert.ok(
      inside.every((f) => !/^\/(run|\.oldroot|var\/lib)/.test(f[4] ?? "")),
      "no host mount points",
    );
    assert.equal(fs.existsSync(marker), true, "the marker is still there on the host");
  }

  it("an image container's command and execs: Docker's capabilities less NET_RAW and MKNOD, no_new_privs, seccomp, minimal /dev, masked /proc, pivoted root", async () => {
    r = await rig();
    const marker = path.join(os.tmpdir(), `choreo-marker-${randomUUID()}`);
    fs.writeFileSync(marker, "host");
    markers.push(marker);
    const pod = r.pod("jail", { containers: [{ name: "c", image: BUSYBOX, command: ["sleep", "300"] }] });
    await r.rt.startPod(pod);
    await assertConfined(pod.metadata!.uid, "c", marker);
  });

  it("a host-filesystem, hostNetwork container is confined the same way", async () => {
    r = await rig({ hostIp: "192.0.2.10" });
    const marker = path.join(os.tmpdir(), `choreo-marker-${randomUUID()}`);
    fs.writeFileSync(marker, "host");
    markers.push(marker);
    const pod = r.pod("hostjail", { hostNetwork: true, containers: [{ name: "c", image: "debian:bookworm", command: ["sleep", "300"] }] });
    const st = await r.rt.startPod(pod);
    assert.equal(st.containerStatuses[0]!.imageId, "process://host");
    await assertConfined(pod.metadata!.uid, "c", marker);
  });

  it("hostile strings in every user field reach the container verbatim and run nothing on the host", async () => {
    r = await rig();
    const h = hostileStrings();
    markers.push(h.marker);
    const env = hostileEnv(h);
    const argv = ["sh", "-c", "sleep 300; :", ...h.values];
    const pod = r.pod("hostile", {
      hostname: h.hostname,
      containers: [{ name: "--help", image: BUSYBOX, command: argv.slice(0, 3), args: h.values, env, workingDir: h.workingDir }],
    });
    const uid = pod.metadata!.uid;
    await r.rt.startPod(pod);
    const { mainPid } = await trackPids(r, uid, "--help");
    const expectedEnv = [
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      `HOSTNAME=${h.hostname}`,
      "HOME=/root",
      ...env.map((e) => `${e.name}=${e.value}`),
    ];
    assert.deepEqual(nulList(fs.readFileSync(`/proc/${mainPid}/cmdline`, "utf8")), argv, "the command's argv, verbatim");
    assert.deepEqual(nulList(fs.readFileSync(`/proc/${mainPid}/environ`, "utf8")), expectedEnv, "the command's env, verbatim and nothing else");
    const ex = await r.rt.exec(uid, "--help", ["cat", "/proc/self/environ"], 5000);
    assert.deepEqual([ex.exitCode, nulList(ex.output)], [0, expectedEnv], "an exec's env, verbatim");
    assert.deepEqual(await r.rt.exec(uid, "--help", ["sh", "-c", "pwd; hostname"], 5000), { exitCode: 0, output: `${h.workingDir}\n${h.hostname}\n` });
    const args = await r.rt.exec(uid, "--help", ["sh", "-c", 'printf "%s\\0" "$@"', "sh", ...h.values], 5000);
    assert.deepEqual(nulList(args.output), h.values, "an exec's argv, verbatim");
    const opt = await r.rt.exec(uid, "--help", h.execCommand, 5000);
    assert.equal(opt.exitCode, 127, "an exec whose argv[0] looks like an option is a command not found");
    assert.equal((await r.rt.exec(uid, "--help", ["sh", "-c", `test -e '${h.marker}'`], 5000)).exitCode, 1, "nothing ran in the container either");
    assert.equal(fs.existsSync(h.marker), false, "nothing ran on the host");
  });
});
