// One node's share of a pod start on the process runtime, without the
// control plane: N pods handed straight to a ProcessRuntime on a real bridge
// network (W at a time, as the agent's pod workers do), until every
// container's command is running. Prints wall time, the machine's CPU
// seconds over the run (all processes: the agent, shims, ip, mount, …) and
// the agent's own, per pod.
//   npm run bench:process-node -- [--pods 100] [--workers 4]
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { BridgeNetwork } from "@choreo/node-agent/net/bridge-network";
import { ProcessRuntime } from "@choreo/node-agent/runtime/process";

const { values } = parseArgs({
  options: { pods: { type: "string", default: "100" }, workers: { type: "string", default: "4" }, rounds: { type: "string", default: "3" } },
});
const N = Number(values.pods);
const W = Number(values.workers);

/** Busy CPU seconds of the whole machine so far (/proc/stat: user+nice+system+irq+softirq). */
function machineCpu(): number {
  const f = (fs.readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").split(/\s+/).slice(1).map(Number);
  const busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0);
  return busy / 100; // USER_HZ
}
const agentCpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

const node = `bench-pn-${process.pid}`;
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "choreo-bench-pn-"));
const network = new BridgeNetwork({ node, podCidr: "10.244.200.0/24", log: silentLogger() });
const rt = new ProcessRuntime({ node, network, stateDir, dnsServer: network.gateway, log: silentLogger() });
await rt.init();

console.log(`| round | ${N} pods, ${W} at a time → commands running | machine CPU | agent CPU | per pod (wall / machine CPU) |\n|---|---|---|---|---|`);
try {
  for (let round = 1; round <= Number(values.rounds); round++) {
    const pods = Array.from(
      { length: N },
      (_, i) =>
        unwrap(
          fromKubeJson({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: `p${i}`, namespace: "default", uid: randomUUID() },
            spec: { containers: [{ name: "c", image: "local/busybox:1.35", command: ["sleep", "3600"] }] },
          }),
        ) as Pod,
    );
    const c0 = machineCpu();
    const a0 = agentCpu();
    const t0 = performance.now();
    const queue = [...pods];
    await Promise.all(
      Array.from({ length: W }, async () => {
        for (let p = queue.shift(); p; p = queue.shift()) await rt.startPod(p);
      }),
    );
    await waitFor(() => pods.every((p) => rt.processes(p.metadata!.uid, "c")?.mainPid !== undefined), {
      timeoutMs: 120_000,
      intervalMs: 20,
      message: "every command running",
    });
    const ms = performance.now() - t0;
    const cpu = machineCpu() - c0;
    const agent = agentCpu() - a0;
    console.log(
      `| ${round} | ${(ms / 1000).toFixed(2)} s | ${cpu.toFixed(2)} s | ${agent.toFixed(2)} s | ${(ms / N).toFixed(1)} ms / ${((cpu * 1000) / N).toFixed(1)} ms |`,
    );
    await Promise.all(pods.map((p) => rt.stopPod({ uid: p.metadata!.uid, namespace: "default", name: p.metadata!.name }, 0)));
  }
} finally {
  await rt.close();
  await network.destroy();
  fs.rmSync(stateDir, { recursive: true, force: true });
}
process.exit(0);
