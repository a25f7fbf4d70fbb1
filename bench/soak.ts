// Soak benchmark: an RC scaled 0 ↔ N over and over on hollow nodes for a
// while, sampling every process's RSS, Redis' memory and object counts, the
// Event count and the event log's size. After warm-up, every figure should
// stay flat: what grows with churn (Events before they expired, a cache that
// never forgets) shows as growth between the warm sample and the last.
//   npm run bench:soak -- --minutes 30 --nodes 50 --pods 600 --event-ttl 5m
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { jetstreamManager } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { EVENT_STREAM } from "@choreo/kit/bus";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { startCluster } from "@choreo/integration-tests/support/cluster";

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "30" },
    nodes: { type: "string", default: "50" },
    pods: { type: "string", default: "600" },
    // The api's CHOREO_EVENT_TTL: short enough that Events expire within the run.
    "event-ttl": { type: "string", default: "5m" },
    // The api's CHOREO_EVENT_RETENTION: how many messages the event log keeps (its bound).
    "event-retention": { type: "string", default: "1000000" },
    "sample-seconds": { type: "string", default: "30" },
  },
});
const MINUTES = Number(values.minutes);
const PODS = Number(values.pods);

function rssMb(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
  } catch {
    return NaN;
  }
}

console.log(
  `choreo soak benchmark — ${new Date().toISOString()} — ${values.nodes} hollow nodes, an RC scaled 0 ↔ ${PODS} for ${MINUTES} min, event TTL ${values["event-ttl"]}, event log ${values["event-retention"]} messages`,
);
const c = await startCluster({
  env: { CHOREO_LOG_LEVEL: "warn", CHOREO_EVENT_TTL: values["event-ttl"], CHOREO_EVENT_RETENTION: values["event-retention"] },
  actors: [
    { name: "node-agent", env: { CHOREO_HOLLOW_NODES: values.nodes, CHOREO_NODE_PODS: "250" } },
    { name: "scheduler", env: {} },
    { name: "replication", env: {} },
  ],
});
const redis = new Redis(c.redis.url);
const jsm = await jetstreamManager(c.nc);
type Sample = { t: number; cycles: number; rss: Record<string, number>; redisMb: number; keys: number; events: number; logMb: number; logMsgs: number };
const samples: Sample[] = [];
let cycles = 0;
try {
  await c.client.create(
    fromKubeJson({
      apiVersion: "v1",
      kind: "ReplicationController",
      metadata: { name: "soak", namespace: "default" },
      spec: {
        replicas: 0,
        selector: { app: "soak" },
        template: {
          metadata: { labels: { app: "soak" } },
          spec: { containers: [{ name: "c", image: "pause", resources: { requests: { cpu: "10m", memory: "16Mi" } } }] },
        },
      },
    }),
  );
  const procs = [
    ...c.apis.map((a) => ["api", a.process] as const),
    ...[...c.actors].map(([n, p]) => [n, p] as const),
    ["nats-server", c.nats.process()] as const,
    ["redis-server", c.redis.process()] as const,
  ];
  const t0 = performance.now();
  const sample = async (): Promise<void> => {
    const info = await redis.info("memory");
    const stream = await jsm.streams.info(EVENT_STREAM);
    const s: Sample = {
      t: (performance.now() - t0) / 60_000,
      cycles,
      rss: Object.fromEntries(procs.map(([n, p]) => [n, rssMb(p.pid)])),
      redisMb: Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0) / 1_048_576,
      keys: await redis.dbsize(),
      events: await redis.zcard("{choreo}:i:events"),
      logMb: stream.state.bytes / 1_048_576,
      logMsgs: stream.state.messages,
    };
    samples.push(s);
    console.log(
      `${s.t.toFixed(1).padStart(5)} min  cycles ${String(s.cycles).padStart(4)}  ${procs.map(([n]) => `${n} ${s.rss[n]!.toFixed(0)}`).join("  ")} MB  redis ${s.redisMb.toFixed(1)} MB, ${s.keys} keys, ${s.events} Events  log ${s.logMsgs} msgs ${s.logMb.toFixed(1)} MB`,
    );
  };
  const scale = async (n: number): Promise<void> => {
    await c.client.patch("replicationcontrollers", "default", "soak", "application/merge-patch+json", { spec: { replicas: n } });
    await waitFor(
      async () => {
        const pods = (await c.client.list("pods", { namespace: "default", labelSelector: "app=soak" })).items.map((o) => o.kind?.value as Pod);
        return n === 0 ? pods.length === 0 : pods.filter((p) => p.status?.phase === "Running").length >= n;
      },
      { timeoutMs: 300_000, intervalMs: 250, message: `${n} soak pods` },
    );
  };
  let nextSample = 0;
  while (performance.now() - t0 < MINUTES * 60_000) {
    if (performance.now() - t0 >= nextSample) {
      await sample();
      nextSample += Number(values["sample-seconds"]) * 1000;
    }
    await scale(PODS);
    await scale(0);
    cycles++;
  }
  await sample();
  // Warm: the first sample after a quarter of the run (Events written before the first TTL have expired by then when TTL ≤ a quarter).
  const warm = samples.find((s) => s.t >= MINUTES / 4) ?? samples[0]!;
  const last = samples.at(-1)!;
  const growth = (a: number, b: number) => `${a.toFixed(1)} → ${b.toFixed(1)} (${a > 0 ? (((b - a) / a) * 100).toFixed(0) : "—"} %)`;
  console.log(`\nafter warm-up (${warm.t.toFixed(1)} min) → end (${last.t.toFixed(1)} min), ${last.cycles - warm.cycles} cycles:`);
  for (const [n] of procs) console.log(`  ${n.padEnd(12)} RSS MB ${growth(warm.rss[n]!, last.rss[n]!)}`);
  console.log(`  redis used MB ${growth(warm.redisMb, last.redisMb)}; keys ${warm.keys} → ${last.keys}; Events ${warm.events} → ${last.events}`);
  console.log(`  event log MB ${growth(warm.logMb, last.logMb)} (${warm.logMsgs} → ${last.logMsgs} messages; kept up to CHOREO_EVENT_RETENTION)`);
} finally {
  redis.disconnect();
  await Promise.race([c.stop(), new Promise((r) => setTimeout(r, 30_000))]);
}
process.exit(0);
