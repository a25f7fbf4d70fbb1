// Control-plane scale benchmark: hollow nodes in one node-agent process, the
// scheduler and replication actors, one RC of P replicas. Times create → all
// bound → all Running as seen on the event log, and prints pods/s end to end,
// pod startup latency, api writes and bus messages per pod, CPU and RSS per
// process. npm run bench:scale -- --nodes 100 --pods 1000
import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { jetstream, jetstreamManager, DeliverPolicy } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { EVENT_STREAM, decodeEvent, streamState } from "@choreo/kit/bus";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { startCluster } from "../integration-tests/support/cluster.js";

const { values } = parseArgs({ options: { nodes: { type: "string", default: "100" }, pods: { type: "string", default: "1000" }, timeout: { type: "string", default: "600" }, direct: { type: "boolean", default: false }, "scheduler-workers": { type: "string", default: "16" }, events: { type: "string", default: "1" } } });
// --direct: create the pods through the api (64 at a time) instead of through an RC and the replication actor.
const DIRECT = values.direct || !existsSync(new URL("../services/replication/src/main.ts", import.meta.url));
const NODES = Number(values.nodes);
const PODS = Number(values.pods);

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? NaN;

function cpuAndRss(pid: number): { cpuSeconds: number; rssMb: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    const ticks = Number(stat[11]) + Number(stat[12]);
    const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
    return { cpuSeconds: ticks / 100, rssMb: rss / 1024 };
  } catch {
    return { cpuSeconds: NaN, rssMb: NaN };
  }
}

console.log(`choreo scale benchmark — ${new Date().toISOString()} — ${NODES} hollow nodes, ${PODS} pods, created ${DIRECT ? "directly" : "by an RC"}`);
const c = await startCluster({
  env: { CHOREO_LOG_LEVEL: "warn" },
  actors: [
    { name: "node-agent", env: { CHOREO_HOLLOW_NODES: String(NODES) } },
    { name: "scheduler", env: { CHOREO_SCHEDULER_WORKERS: values["scheduler-workers"], CHOREO_EVENTS: values.events } },
    ...(DIRECT ? [] : [{ name: "replication", env: { CHOREO_EVENTS: values.events } }]),
  ],
});
try {
  const t0nodes = performance.now();
  await waitFor(async () => (await c.client.list("nodes")).items.length >= NODES, { timeoutMs: 600_000, intervalMs: 500, message: `${NODES} nodes` });
  console.log(`nodes registered: ${NODES} in ${((performance.now() - t0nodes) / 1000).toFixed(1)} s`);

  const jsm = await jetstreamManager(c.nc);
  const before = await streamState(jsm);
  const redis = new Redis(c.redis.url);
  const revBefore = Number(await redis.get("{choreo}:rev"));
  const procs = [...c.apis.map((a) => ["api", a.process] as const), ...[...c.actors].map(([n, p]) => [n, p] as const)];
  const cpuBefore = new Map(procs.map(([n, p]) => [n, cpuAndRss(p.pid)]));

  const created = new Map<string, number>();
  const bound = new Map<string, number>();
  const runningAt = new Map<string, number>();
  const consumer = await jetstream(c.nc).consumers.get(EVENT_STREAM, { filter_subjects: "choreo.ev.pods.>", deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: before.lastRevision + 1 });
  const messages = await consumer.consume({ max_messages: 4096 });
  const done = (async () => {
    for await (const m of messages) {
      const ev = decodeEvent(m.data);
      const pod = ev.object?.kind?.value as Pod | undefined;
      const name = pod?.metadata?.name ?? "";
      const now = performance.now();
      if (ev.type === "ADDED" && !created.has(name)) created.set(name, now);
      if (pod?.spec?.nodeName && !bound.has(name)) bound.set(name, now);
      if (pod?.status?.phase === "Running" && !runningAt.has(name)) runningAt.set(name, now);
      if (runningAt.size >= PODS) break;
    }
  })();

  const t0 = performance.now();
  const template = { metadata: { labels: { app: "bench" } }, spec: { containers: [{ name: "c", image: "pause", resources: { requests: { cpu: "10m", memory: "16Mi" } } }] } };
  if (DIRECT) {
    let next = 0;
    await Promise.all(Array.from({ length: 64 }, async () => {
      for (let i = next++; i < PODS; i = next++) {
        await c.client.create(fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name: `bench-${i}`, namespace: "default", labels: template.metadata.labels }, spec: template.spec }));
      }
    }));
  } else {
    await c.client.create(fromKubeJson({
      apiVersion: "v1", kind: "ReplicationController", metadata: { name: "bench", namespace: "default" },
      spec: { replicas: PODS, selector: { app: "bench" }, template },
    }));
  }
  await Promise.race([done, new Promise((_, rej) => setTimeout(() => rej(new Error(`timed out: ${runningAt.size}/${PODS} running, ${bound.size} bound, ${created.size} created`)), Number(values.timeout) * 1000))]);
  const t1 = performance.now();
  await messages.close();
  const allBound = Math.max(...bound.values());
  const firstCreated = Math.min(...created.values());
  const startup = [...runningAt].map(([n, t]) => t - (created.get(n) ?? t));
  const after = await streamState(jsm);
  const revAfter = Number(await redis.get("{choreo}:rev"));
  redis.disconnect();

  console.log(`end to end: ${PODS} pods Running in ${((t1 - t0) / 1000).toFixed(2)} s → ${(PODS / ((t1 - t0) / 1000)).toFixed(0)} pods/s`);
  console.log(`all created after ${((Math.max(...created.values()) - t0) / 1000).toFixed(2)} s`);
  console.log(`all bound after ${((allBound - t0) / 1000).toFixed(2)} s; scheduler (first create → last bind): ${(PODS / ((allBound - firstCreated) / 1000)).toFixed(0)} pods/s`);
  console.log(`pod startup (ADDED → Running): p50 ${pct(startup, 50).toFixed(0)} ms, p99 ${pct(startup, 99).toFixed(0)} ms`);
  console.log(`api writes per pod: ${((revAfter - revBefore) / PODS).toFixed(2)}; bus messages per pod: ${((after.lastRevision - before.lastRevision) / PODS).toFixed(2)}`);
  for (const [n, p] of procs) {
    const a = cpuBefore.get(n);
    const b = cpuAndRss(p.pid);
    console.log(`  ${n.padEnd(12)} CPU ${(b.cpuSeconds - (a?.cpuSeconds ?? 0)).toFixed(1)} s over the run, RSS ${b.rssMb.toFixed(0)} MB`);
  }
} finally {
  await c.stop();
}
