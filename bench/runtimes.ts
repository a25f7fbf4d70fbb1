// Real-pod benchmark: an RC of N small pods to all Running on the docker
// and process runtimes (2 nodes), beside plain `docker run` of N containers
// 8 at a time and Docker Swarm converging a service to N/N on the same
// engine. Also pod startup p50/p99 (creation → Running in the pod's status)
// and the time from killing 5 containers to all Running again.
//   npm run bench:runtimes -- --sizes 50,100 [--runtimes docker,process,hollow] [--no-swarm]
// (hollow: simulated pods, 50 ms to start, no processes — the control plane's share alone)
import { execFile } from "node:child_process";
import { promisify, parseArgs } from "node:util";
import { unwrap } from "@choreo/kit";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { waitFor } from "@choreo/kit/testing";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { NAMES } from "@choreo/node-agent/net/types";
import { dockerAvailable, startRealCluster, type RealCluster, type RealRuntime } from "@choreo/integration-tests/support/real-cluster";

const sh = promisify(execFile);
const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "50,100" },
    runtimes: { type: "string", default: "docker,process" },
    "no-swarm": { type: "boolean", default: false },
    workers: { type: "string", default: "4" },
    "no-plain": { type: "boolean", default: false },
  },
});
const SIZES = values.sizes.split(",").map(Number);
const IMAGE = "local/busybox:1.35";
const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? NaN;
const secs = (ms: number): string => (ms / 1000).toFixed(2);
const rows: string[] = [];
const report = (line: string): void => {
  rows.push(line);
  console.log(line);
};

async function pods(c: RealCluster, app: string): Promise<Pod[]> {
  return (await c.client.list("pods", { labelSelector: `app=${app}` })).items.map((o) => unwrap(o) as Pod);
}
const isRunning = (p: Pod): boolean =>
  p.status?.phase === "Running" && !p.metadata?.deletionTimestamp && p.status.containerStatuses[0]?.state?.running !== undefined;

/**
 * RC of n → all Running; returns wall time and per-pod startup: from the
 * pod first seen (created by the RC) to first seen Running, polled every
 * 100 ms (timestamps in objects have 1 s resolution, too coarse here).
 */
async function rcToRunning(c: RealCluster, n: number): Promise<{ ms: number; startup: number[] }> {
  const app = `bench-${n}`;
  const t0 = Date.now();
  await c.client.create(
    fromKubeJson({
      apiVersion: "v1",
      kind: "ReplicationController",
      metadata: { name: app, namespace: "default" },
      spec: {
        replicas: n,
        selector: { app },
        template: {
          metadata: { labels: { app } },
          spec: { terminationGracePeriodSeconds: 1, containers: [{ name: "c", image: IMAGE, command: ["sleep", "3600"] }] },
        },
      },
    }),
  );
  const startup: number[] = [];
  const firstSeen = new Map<string, number>();
  const running = new Set<string>();
  await waitFor(
    async () => {
      const ps = await pods(c, app);
      const now = Date.now();
      for (const p of ps) {
        const uid = p.metadata!.uid;
        if (!firstSeen.has(uid)) firstSeen.set(uid, now);
        if (isRunning(p) && !running.has(uid)) {
          running.add(uid);
          startup.push(now - firstSeen.get(uid)!);
        }
      }
      return ps.filter(isRunning).length === n;
    },
    { timeoutMs: 600_000, intervalMs: 100, message: `${n} pods Running` },
  );
  return { ms: Date.now() - t0, startup };
}

/** Kills 5 containers from outside; time until all n are Running again (restarted in place). */
async function killFive(c: RealCluster, runtime: RealRuntime, n: number): Promise<number> {
  const app = `bench-${n}`;
  const victims = (await pods(c, app)).slice(0, 5);
  const restarts = (p: Pod): number => p.status?.containerStatuses[0]?.restartCount ?? 0;
  const before = new Map(victims.map((p) => [p.metadata!.uid, restarts(p)]));
  const t0 = Date.now();
  await Promise.all(
    victims.map(async (p) => {
      if (runtime === "docker") await sh("docker", ["kill", p.status!.containerStatuses[0]!.containerId.replace("docker://", "")]);
      else {
        // A pid listed may be gone by the kill (a shell's short-lived child): that is fine.
        const { stdout } = await sh("ip", ["netns", "pids", NAMES.netns(p.metadata!.uid)]);
        await sh("kill", ["-9", ...stdout.split(/\s+/).filter(Boolean)]).catch(() => undefined);
      }
    }),
  );
  await waitFor(
    async () => {
      const ps = await pods(c, app);
      return ps.filter(isRunning).length === n && ps.filter((p) => before.has(p.metadata!.uid)).every((p) => restarts(p) > before.get(p.metadata!.uid)!);
    },
    { timeoutMs: 300_000, intervalMs: 100, message: "the 5 killed containers Running again" },
  );
  return Date.now() - t0;
}

/**
 * The service data plane's lag: a Service over the RC's pods; one pod is
 * deleted; the time until its IP is gone from every node's NAT rules
 * (endpoints controller → Endpoints → each node's proxy → iptables).
 */
async function proxyLag(c: RealCluster, n: number): Promise<number[]> {
  const app = `bench-${n}`;
  await c.client.create(
    fromKubeJson({ apiVersion: "v1", kind: "Service", metadata: { name: app, namespace: "default" }, spec: { selector: { app }, ports: [{ port: 80 }] } }),
  );
  const lags: number[] = [];
  const natRules = async (): Promise<string> => (await sh("iptables-save", ["-t", "nat"], { maxBuffer: 64 << 20 })).stdout;
  for (const victim of (await pods(c, app)).slice(0, 3)) {
    const ip = victim.status!.podIp;
    const prefixes = c.nodes.map((node) => NAMES.chainPrefix(node));
    const programmed = (rules: string): number =>
      rules.split("\n").filter((l) => l.includes(`--to-destination ${ip}:`) && prefixes.some((p) => l.includes(p))).length;
    await waitFor(async () => programmed(await natRules()) >= c.nodes.length, { timeoutMs: 60_000, intervalMs: 50, message: "the pod in every node's rules" });
    const t0 = Date.now();
    await c.client.delete("pods", "default", victim.metadata!.name, { gracePeriodSeconds: 1 });
    await waitFor(async () => programmed(await natRules()) === 0, { timeoutMs: 60_000, intervalMs: 10, message: "the pod gone from every node's rules" });
    lags.push(Date.now() - t0);
  }
  await c.client.delete("services", "default", app);
  return lags;
}

async function choreo(runtime: RealRuntime): Promise<void> {
  // Kubelet-like back-off would hide the restart path behind a 1 s wait; the bench restarts at once.
  const c = await startRealCluster(runtime, { agentEnv: { CHOREO_EVENTS: "0", CHOREO_RESTART_BACKOFF_MS: "100", CHOREO_AGENT_WORKERS: values.workers } });
  try {
    for (const n of SIZES) {
      const { ms, startup } = await rcToRunning(c, n);
      report(
        `| choreo ${runtime} runtime, RC of ${n} → all Running (${values.workers} pod workers per node) | ${secs(ms)} s | startup p50 ${secs(pct(startup, 50))} s, p99 ${secs(pct(startup, 99))} s |`,
      );
      // Hollow pods have no processes to kill and no addresses in service rules: only the control plane's share is measured.
      if (runtime !== "hollow") await dataPlane(c, runtime, n);
      await c.client.delete("replicationcontrollers", "default", `bench-${n}`);
      await waitFor(async () => (await pods(c, `bench-${n}`)).length === 0, { timeoutMs: 300_000, message: "bench pods gone" });
    }
  } finally {
    await c.stop();
  }
}

/** Recovery from 5 killed containers and the service rules' lag, on a real runtime. */
async function dataPlane(c: RealCluster, runtime: RealRuntime, n: number): Promise<void> {
  const k = await killFive(c, runtime, n);
  report(`| choreo ${runtime} runtime, 5 of ${n} containers killed → all Running | ${secs(k)} s | |`);
  const lags = await proxyLag(c, n);
  report(
    `| choreo ${runtime} runtime, a pod deleted → its IP gone from both nodes' service rules (${n} endpoints) | ${lags.map((l) => `${l} ms`).join(", ")} | 3 deletions |`,
  );
}

/** Plain docker run of n containers, 8 at a time. */
async function dockerRun(n: number): Promise<void> {
  const names = Array.from({ length: n }, (_, i) => `choreo-bench-plain-${i}`);
  const t0 = Date.now();
  for (let i = 0; i < n; i += 8) await Promise.all(names.slice(i, i + 8).map((name) => sh("docker", ["run", "-d", "--name", name, IMAGE, "sleep", "3600"])));
  report(`| plain docker run, ${n} containers 8 at a time | ${secs(Date.now() - t0)} s | |`);
  await sh("docker", ["rm", "-f", ...names]);
}

/** Docker Swarm mode on the same engine: service with n replicas → n/n. */
async function swarm(n: number): Promise<void> {
  await sh("docker", ["swarm", "init", "--advertise-addr", "127.0.0.1"]).catch(() => undefined);
  try {
    const t0 = Date.now();
    await sh("docker", ["service", "create", "--detach", "--name", "choreo-bench", "--replicas", String(n), IMAGE, "sleep", "3600"]);
    await waitFor(
      async () => (await sh("docker", ["service", "ls", "--filter", "name=choreo-bench", "--format", "{{.Replicas}}"])).stdout.trim() === `${n}/${n}`,
      { timeoutMs: 600_000, intervalMs: 200, message: "swarm n/n" },
    );
    report(`| docker swarm, service of ${n} replicas → ${n}/${n} | ${secs(Date.now() - t0)} s | |`);
    await sh("docker", ["service", "rm", "choreo-bench"]);
    await waitFor(async () => (await sh("docker", ["ps", "-q", "--filter", "label=com.docker.swarm.service.name=choreo-bench"])).stdout.trim() === "", {
      timeoutMs: 120_000,
      message: "swarm tasks gone",
    });
  } finally {
    await sh("docker", ["swarm", "leave", "--force"]).catch(() => undefined);
  }
}

console.log(`| run | time | notes |\n|---|---|---|`);
const runtimes = values.runtimes.split(",") as RealRuntime[];
const docker = dockerAvailable();
for (const r of runtimes) if (r !== "docker" || docker) await choreo(r);
if (docker && !values["no-plain"]) {
  for (const n of SIZES) await dockerRun(n);
  if (!values["no-swarm"]) for (const n of SIZES) await swarm(n);
}
console.log(`\n${rows.length} figures`);
process.exit(0);
