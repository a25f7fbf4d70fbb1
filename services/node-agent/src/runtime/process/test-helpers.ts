import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { NAMES } from "../../net/types.js";
import type { LogOptions, PodRuntimeStatus } from "../runtime.js";
import { Cgroups } from "./cgroups.js";
import { ProcessRuntime, type ProcessRuntimeOptions } from "./process-runtime.js";
import { procStartTime } from "./proc.js";
import { LoopbackNetwork } from "./test-network.js";

/** The busybox image the tests run (its rootfs is in the default image store). */
export const BUSYBOX = "local/busybox:1.35";

let seq = 0;

/** A test's world: a runtime on a fresh node name and state dir, and what must be gone at the end. */
export interface TestRig {
  node: string;
  stateDir: string;
  rt: ProcessRuntime;
  opts: ProcessRuntimeOptions;
  /** Every process the test saw (pid → start time); all must be dead at the end. */
  pids: Map<number, string | undefined>;
  /** Pods made with {@link TestRig.pod}. */
  pods: Pod[];
  pod(name: string, spec: Record<string, unknown>): Pod;
  /** Stops every pod, closes the runtime and asserts nothing is left. */
  cleanup(): Promise<void>;
}

/** A fresh runtime on a unique node with its state under a mkdtemp dir. */
export async function rig(extra: Partial<ProcessRuntimeOptions> = {}): Promise<TestRig> {
  const node = `t${process.pid}-${++seq}`;
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "choreo-prt-"));
  const opts: ProcessRuntimeOptions = {
    node,
    network: new LoopbackNetwork(`10.231.${seq % 250}.0/24`),
    stateDir,
    dnsServer: "10.231.0.1",
    log: silentLogger(),
    pollMs: 200,
    ...extra,
  };
  const rt = new ProcessRuntime(opts);
  await rt.init();
  const r: TestRig = {
    node,
    stateDir,
    rt,
    opts,
    pids: new Map(),
    pods: [],
    pod(name, spec) {
      const p = unwrap(fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "default", uid: randomUUID() }, spec })) as Pod;
      r.pods.push(p);
      return p;
    },
    async cleanup() {
      for (const p of r.pods) await r.rt.stopPod({ uid: p.metadata!.uid, namespace: "default", name: p.metadata!.name }, 0);
      await r.rt.close();
      await assertNothingLeft(r);
      fs.rmSync(stateDir, { recursive: true, force: true });
    },
  };
  return r;
}

/** No process, netns, mount, cgroup or pod file of the rig's pods is left. */
export async function assertNothingLeft(r: TestRig): Promise<void> {
  // SIGKILLed processes take a moment to be gone; none may stay.
  for (const [pid, start] of r.pids) await waitFor(() => procStartTime(pid) !== start, { timeoutMs: 5000, message: `process ${pid} is still alive` });
  for (const p of r.pods) assert.equal(fs.existsSync(`/run/netns/${NAMES.netns(p.metadata!.uid)}`), false, "netns left");
  const mounts = fs.readFileSync("/proc/self/mountinfo", "utf8");
  assert.equal(mounts.includes(r.stateDir), false, "mounts left under the state dir");
  assert.equal(new Cgroups().nodeExists(r.node), false, "cgroups left");
  assert.deepEqual(fs.readdirSync(path.join(r.stateDir, "pods")), [], "pod dirs left");
  const stray = fs
    .readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return fs.readFileSync(`/proc/${d}/cmdline`, "utf8").includes(r.stateDir);
      } catch {
        return false;
      }
    });
  assert.deepEqual(stray, [], "processes of the state dir left");
}

/** A container's status once `pred` holds. */
export function waitStatus(r: TestRig, uid: string, container: string, pred: (s: PodRuntimeStatus["containerStatuses"][number]) => boolean, message?: string) {
  return waitFor(
    () => {
      const s = r.rt.podStatus(uid)?.containerStatuses.find((c) => c.name === container);
      return s && pred(s) ? s : undefined;
    },
    { timeoutMs: 15_000, message },
  );
}

/** The whole (non-followed) log of a container as text. */
export async function logText(r: TestRig, uid: string, o: Partial<LogOptions> & { container: string }): Promise<string> {
  let out = "";
  for await (const chunk of r.rt.logs(uid, { follow: false, timestamps: false, previous: false, ...o }, AbortSignal.timeout(15_000))) {
    out += Buffer.from(chunk).toString("utf8");
  }
  return out;
}

/** Records the container's pids for the end-of-test check, and returns them. */
export async function trackPids(r: TestRig, uid: string, container: string): Promise<{ shimPid: number; initPid: number; mainPid: number }> {
  const p = await waitFor(
    () => {
      const x = r.rt.processes(uid, container);
      return x?.initPid && x.mainPid ? { shimPid: x.shimPid, initPid: x.initPid, mainPid: x.mainPid } : undefined;
    },
    { timeoutMs: 10_000, message: `pids of ${container}` },
  );
  for (const pid of [p.shimPid, p.initPid, p.mainPid]) r.pids.set(pid, procStartTime(pid));
  return p;
}
