// Rollout benchmark: hollow nodes in one node-agent process, the scheduler
// and replication actors, a Deployment of P hollow pods (RollingUpdate,
// maxSurge 25%, maxUnavailable 25%) rolled to a new image. Prints the seconds
// from the image change to a complete rollout (every pod updated and
// available, observedGeneration current), the most pods seen at once, and the
// CPU each process spent. No assertions on times.
//   npm run bench:rollout -- --pods 100,1000 --nodes 20
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { unwrap } from "@choreo/kit";
import type { Deployment } from "@choreo/kit/gen/choreo/apps/v1/apps";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import { startCluster } from "@choreo/integration-tests/support/cluster";

const { values } = parseArgs({
  options: {
    nodes: { type: "string", default: "20" },
    pods: { type: "string", default: "100,1000" },
    "node-pods": { type: "string", default: "110" },
    events: { type: "string", default: "1" },
    timeout: { type: "string", default: "900" },
  },
});
const NODES = Number(values.nodes);
const SIZES = values.pods.split(",").map(Number);
const TIMEOUT_MS = Number(values.timeout) * 1000;

function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return (Number(stat[11]) + Number(stat[12])) / 100;
  } catch {
    return NaN;
  }
}

console.log(
  `choreo rollout benchmark — ${new Date().toISOString()} — ${NODES} hollow nodes (${values["node-pods"]} pods each), Deployments of ${SIZES.join(", ")} pods, maxSurge 25% / maxUnavailable 25%; events ${values.events === "0" ? "off" : "on"}`,
);
const c = await startCluster({
  env: { CHOREO_LOG_LEVEL: "warn" },
  actors: [
    { name: "node-agent", env: { CHOREO_HOLLOW_NODES: String(NODES), CHOREO_NODE_PODS: values["node-pods"] } },
    { name: "scheduler", env: { CHOREO_EVENTS: values.events } },
    { name: "replication", env: { CHOREO_EVENTS: values.events } },
  ],
});
try {
  await waitFor(async () => (await c.client.list("nodes")).items.length >= NODES, { timeoutMs: 600_000, intervalMs: 500, message: `${NODES} nodes` });
  const get = async (name: string): Promise<Deployment> => unwrap(await c.client.get("deployments", "default", name)) as Deployment;
  const complete = (d: Deployment, n: number): boolean => {
    const s = d.status;
    return (s?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1) && s?.updatedReplicas === n && s.replicas === n && s.availableReplicas === n;
  };
  for (const n of SIZES) {
    const name = `bench-${n}`;
    const t0 = performance.now();
    await c.client.create(
      fromKubeJson({
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name, namespace: "default" },
        spec: {
          replicas: n,
          selector: { matchLabels: { app: name } },
          strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: "25%", maxUnavailable: "25%" } },
          template: {
            metadata: { labels: { app: name } },
            spec: { containers: [{ name: "c", image: "pause:1", resources: { requests: { cpu: "10m", memory: "16Mi" } } }] },
          },
        },
      }),
    );
    await waitFor(async () => complete(await get(name), n), { timeoutMs: TIMEOUT_MS, intervalMs: 200, message: `${n} pods available` });
    const created = (performance.now() - t0) / 1000;

    const cpu0 = new Map([...c.actors].map(([k, p]) => [k, cpuSeconds(p.pid)]));
    const api0 = c.apis.map((a) => cpuSeconds(a.process.pid));
    const t1 = performance.now();
    await c.client.patch("deployments", "default", name, "application/strategic-merge-patch+json", {
      spec: { template: { spec: { containers: [{ name: "c", image: "pause:2" }] } } },
    });
    let maxPods = 0;
    await waitFor(
      async () => {
        const d = await get(name);
        maxPods = Math.max(maxPods, d.status?.replicas ?? 0);
        return complete(d, n);
      },
      { timeoutMs: TIMEOUT_MS, intervalMs: 100, message: `rollout of ${n}` },
    );
    const rolled = (performance.now() - t1) / 1000;
    const cpu = [...c.actors].map(([k, p]) => `${k} ${(cpuSeconds(p.pid) - (cpu0.get(k) ?? 0)).toFixed(1)} s`);
    const apiCpu = c.apis.map((a, i) => cpuSeconds(a.process.pid) - (api0[i] ?? 0)).reduce((x, y) => x + y, 0);
    console.log(
      `${String(n).padStart(5)} pods: created and available in ${created.toFixed(1)} s; rolled to a new image in ${rolled.toFixed(1)} s (${(n / rolled).toFixed(0)} pods/s), at most ${maxPods} pods (bound ${n + Math.ceil(n / 4)}); CPU during the rollout: api ${apiCpu.toFixed(1)} s, ${cpu.join(", ")}`,
    );
    await c.client.delete("deployments", "default", name);
    await waitFor(async () => (await c.client.list("pods", { namespace: "default", labelSelector: `app=${name}` })).items.length === 0, {
      timeoutMs: TIMEOUT_MS,
      intervalMs: 500,
      message: `${name} cleaned up`,
    });
  }
} finally {
  await c.stop();
}
