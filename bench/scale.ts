// Control-plane scale benchmark: hollow nodes in one node-agent process, the
// scheduler and replication actors, one RC of P replicas. Times create → all
// bound → all Running as seen on the event log, and prints pods/s end to end,
// pod startup latency, api writes and bus messages per pod, CPU and RSS per
// process. npm run bench:scale -- --nodes 100 --pods 1000
// To profile the node-agent: CHOREO_NODE_AGENT_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" (see startCluster);
// --nodes-only also prints each process's CPU over its 20 s idle (the heartbeat alone, to take from a run's CPU per pod).
import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { jetstream, jetstreamManager, DeliverPolicy } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { EVENT_STREAM, decodeEvent, streamState } from "@choreo/kit/bus";
import { ApiClient } from "@choreo/kit/client";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { startCluster } from "@choreo/integration-tests/support/cluster";

const { values } = parseArgs({
  options: {
    nodes: { type: "string", default: "100" },
    pods: { type: "string", default: "1000" },
    timeout: { type: "string", default: "600" },
    direct: { type: "boolean", default: false },
    "scheduler-workers": { type: "string", default: "128" },
    events: { type: "string", default: "1" },
    // Node heartbeats: the defaults detect a dead node in ≤ 10 s; at thousands of nodes use Kubernetes' (10 s renew, 40 s grace).
    "lease-renew-ms": { type: "string", default: "2000" },
    "grace-seconds": { type: "string", default: "8" },
    // --rate N: create the pods directly at a steady N pods/s and report startup latency.
    rate: { type: "string", default: "0" },
    // --nodes-only: register the nodes, wait until all are Ready, report, stop.
    "nodes-only": { type: "boolean", default: false },
    // --republish 0: node agents read their pods through a filtered consumer each (before issue 15), to compare.
    republish: { type: "string", default: "1" },
  },
});
// --direct: create the pods through the api (64 at a time) instead of through an RC and the replication actor.
const RATE = Number(values.rate);
const DIRECT = values.direct || RATE > 0 || !existsSync(new URL("../services/replication/src/main.ts", import.meta.url));
const NODES = Number(values.nodes);
const PODS = Number(values.pods);

// Not Math.max(...xs): 150,000 arguments overflow the stack.
const maxOf = (xs: Iterable<number>): number => {
  let m = -Infinity;
  for (const x of xs) if (x > m) m = x;
  return m;
};
const minOf = (xs: Iterable<number>): number => -maxOf([...xs].map((x) => -x));
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

console.log(
  `choreo scale benchmark — ${new Date().toISOString()} — ${NODES} hollow nodes, ${PODS} pods, created ${RATE > 0 ? `directly at ${RATE}/s` : DIRECT ? "directly" : "by an RC"}; events ${values.events === "0" ? "off" : "on"}; lease renew ${values["lease-renew-ms"]} ms; node agents read their pods ${values.republish === "0" ? "through a consumer each" : "live (RePublish)"}`,
);
const c = await startCluster({
  env: { CHOREO_LOG_LEVEL: "warn", CHOREO_POD_REPUBLISH: values.republish },
  actors: [
    { name: "node-agent", env: { CHOREO_HOLLOW_NODES: String(NODES), CHOREO_LEASE_RENEW_MS: values["lease-renew-ms"], CHOREO_NODE_PODS: "250" } },
    {
      name: "scheduler",
      env: { CHOREO_SCHEDULER_WORKERS: values["scheduler-workers"], CHOREO_EVENTS: values.events, CHOREO_NODE_GRACE_SECONDS: values["grace-seconds"] },
    },
    ...(DIRECT ? [] : [{ name: "replication", env: { CHOREO_EVENTS: values.events } }]),
  ],
});
try {
  const t0nodes = performance.now();
  const readyNodes = async (): Promise<number> =>
    (await c.client.list("nodes")).items.filter((o) =>
      (o.kind?.value as Node | undefined)?.status?.conditions.some((x) => x.type === "Ready" && x.status === "True"),
    ).length;
  await waitFor(async () => (await readyNodes()) >= NODES, { timeoutMs: 600_000, intervalMs: 500, message: `${NODES} nodes Ready` });
  console.log(
    `nodes Ready: ${NODES} in ${((performance.now() - t0nodes) / 1000).toFixed(1)} s (lease renewal every ${values["lease-renew-ms"]} ms → ${(NODES / (Number(values["lease-renew-ms"]) / 1000)).toFixed(0)} lease writes/s)`,
  );
  if (values["nodes-only"]) {
    const redis = new Redis(c.redis.url);
    const r0 = Number(await redis.get("{choreo}:rev"));
    const idleProcs = [...c.apis.map((a) => ["api", a.process] as const), ...[...c.actors].map(([n, p]) => [n, p] as const)];
    const idleBefore = new Map(idleProcs.map(([n, p]) => [n, cpuAndRss(p.pid).cpuSeconds]));
    await new Promise((r) => setTimeout(r, 20_000));
    // The heartbeat's cost alone (leases, node status checks): what a run's CPU per pod includes besides the pods.
    console.log(
      `idle CPU over the 20 s: ${idleProcs.map(([n, p]) => `${n} ${((cpuAndRss(p.pid).cpuSeconds - (idleBefore.get(n) ?? 0)) / 20).toFixed(3)} s/s`).join(", ")}`,
    );
    const r1 = Number(await redis.get("{choreo}:rev"));
    redis.disconnect();
    const consumers = (await (await jetstreamManager(c.nc)).streams.info(EVENT_STREAM)).state.consumer_count;
    console.log(
      `idle cluster: ${((r1 - r0) / 20).toFixed(0)} api writes/s over 20 s; still Ready: ${await readyNodes()}/${NODES}; ${consumers} consumers of the event log`,
    );
    for (const [n, p] of [
      ...c.apis.map((a) => ["api", a.process] as const),
      ...[...c.actors].map(([n, p]) => [n, p] as const),
      ["nats-server", c.nats.process()] as const,
      ["redis-server", c.redis.process()] as const,
    ]) {
      const u = cpuAndRss(p.pid);
      console.log(`  ${n.padEnd(12)} CPU ${u.cpuSeconds.toFixed(1)} s since start, RSS ${u.rssMb.toFixed(0)} MB`);
    }
  } else {
    const apiWrites = async (): Promise<Map<number, number>> => {
      // Cumulative bucket counts of write requests (le → count), summed over methods and transports.
      const text = await (await fetch(`http://127.0.0.1:${c.apis[0]?.metricsPort}/metrics`)).text();
      const m = new Map<number, number>();
      for (const x of text.matchAll(/^choreo_api_request_duration_seconds_bucket\{([^}]*)\} (\d+)/gm)) {
        const labels = x[1] ?? "";
        if (!/method="(create|update|updateStatus|patch|delete|bind)"/i.test(labels)) continue;
        const le = /le="([^"]+)"/.exec(labels)?.[1] ?? "+Inf";
        const k = le === "+Inf" ? Infinity : Number(le);
        m.set(k, (m.get(k) ?? 0) + Number(x[2]));
      }
      return m;
    };
    const writesBefore = await apiWrites();
    // API Priority and Fairness (services/api/src/flowcontrol): requests waiting for a seat, queued so far, refused with 429.
    const flowControl = async (): Promise<{ inQueue: number; queued: number; waitSeconds: number; refused: number; audited: number }> => {
      const text = await (await fetch(`http://127.0.0.1:${c.apis[0]?.metricsPort}/metrics`)).text();
      const sum = (re: RegExp): number => [...text.matchAll(re)].reduce((a, x) => a + Number(x[1]), 0);
      return {
        inQueue: sum(/^choreo_api_flowcontrol_current_inqueue_requests\{[^}]*\} (\d+)/gm),
        queued: sum(/^choreo_api_flowcontrol_request_wait_duration_seconds_count\{[^}]*\} (\d+)/gm),
        waitSeconds: sum(/^choreo_api_flowcontrol_request_wait_duration_seconds_sum\{[^}]*\} ([\d.e+-]+)/gm),
        refused: sum(/^choreo_api_flowcontrol_rejected_requests_total\{[^}]*\} (\d+)/gm),
        // The audit log's lines (services/api/src/audit: one per request its policy does not leave out).
        audited: sum(/^choreo_audit_events_total\{[^}]*\} (\d+)/gm),
      };
    };
    const flowBefore = await flowControl();
    let maxInQueue = 0;

    const jsm = await jetstreamManager(c.nc);
    const before = await streamState(jsm);
    const redis = new Redis(c.redis.url);
    const revBefore = Number(await redis.get("{choreo}:rev"));
    const procs = [
      ...c.apis.map((a) => ["api", a.process] as const),
      ...[...c.actors].map(([n, p]) => [n, p] as const),
      ["nats-server", c.nats.process()] as const,
      ["redis-server", c.redis.process()] as const,
    ];
    const cpuBefore = new Map(procs.map(([n, p]) => [n, cpuAndRss(p.pid)]));

    /** Changes seen on the event log during the run, by resource. */
    const byResource = new Map<string, number>();
    const created = new Map<string, number>();
    const bound = new Map<string, number>();
    const runningAt = new Map<string, number>();
    const consumer = await jetstream(c.nc).consumers.get(EVENT_STREAM, {
      filter_subjects: "choreo.ev.>",
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: before.lastRevision + 1,
    });
    const messages = await consumer.consume({ max_messages: 4096 });
    const done = (async () => {
      for await (const m of messages) {
        const resource = m.subject.split(".")[2] ?? "";
        byResource.set(resource, (byResource.get(resource) ?? 0) + 1);
        if (resource !== "pods") continue;
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

    // The API's answer time throughout (its SLO): a GET of one object and a list page of 500 pods, every second, asked
    // as an ordinary user — a ServiceAccount bound to `view` (priority level workload-low), not the administrator,
    // whom flow control exempts.
    await c.client.create(fromKubeJson({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "bench-probe", namespace: "default" } }));
    await c.client.create(
      fromKubeJson({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: "bench-probe-view" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
        subjects: [{ kind: "ServiceAccount", name: "bench-probe", namespace: "default" }],
      }),
    );
    const probeToken = (await c.client.createToken("default", "bench-probe", { spec: { expirationSeconds: 7200 } })).status?.token ?? "";
    const probeClient = new ApiClient(c.nc, { timeoutMs: 15_000, token: probeToken });
    // The binding reaches the api's RBAC cache through its watch: a moment later.
    await waitFor(
      () =>
        probeClient.list("pods", { namespace: "default", limit: 1 }).then(
          () => true,
          () => false,
        ),
      { timeoutMs: 30_000, message: "the probe's ServiceAccount may list pods" },
    );
    const probeGet: number[] = [];
    let probeFailures = 0;
    const probeList: number[] = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const a = performance.now();
        await probeClient.get("namespaces", "", "default").catch(() => void probeFailures++);
        const b = performance.now();
        await probeClient.list("pods", { namespace: "default", limit: 500 }).catch(() => void probeFailures++);
        probeGet.push(b - a);
        probeList.push(performance.now() - b);
        await new Promise((r) => setTimeout(r, 1000));
      }
    })();

    // Every 10 s: how far each stage is and the rate of the last 10 s — a rate that falls as pods pile up is work that grows with the pod count.
    let lastRunning = 0;
    const progress = setInterval(() => {
      void flowControl().then(
        (f) => (maxInQueue = Math.max(maxInQueue, f.inQueue)),
        () => undefined,
      );
      const sec = ((performance.now() - t0) / 1000).toFixed(0);
      const rss = procs.map(([n, p]) => `${n} ${cpuAndRss(p.pid).rssMb.toFixed(0)}`).join(", ");
      console.log(
        `  ${sec} s: created ${created.size}, bound ${bound.size}, Running ${runningAt.size} (+${((runningAt.size - lastRunning) / 10).toFixed(0)}/s); RSS MB ${rss}`,
      );
      lastRunning = runningAt.size;
    }, 10_000);
    progress.unref();
    const t0 = performance.now();
    const template = {
      metadata: { labels: { app: "bench" } },
      spec: { containers: [{ name: "c", image: "pause", resources: { requests: { cpu: "10m", memory: "16Mi" } } }] },
    };
    if (RATE > 0) {
      // A steady stream: one pod every 1000/RATE ms, not waiting for answers.
      const pending: Promise<unknown>[] = [];
      for (let i = 0; i < PODS; i++) {
        const due = t0 + (i * 1000) / RATE;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        pending.push(
          c.client.create(
            fromKubeJson({
              apiVersion: "v1",
              kind: "Pod",
              metadata: { name: `bench-${i}`, namespace: "default", labels: template.metadata.labels },
              spec: template.spec,
            }),
          ),
        );
      }
      await Promise.all(pending);
    } else if (DIRECT) {
      let next = 0;
      await Promise.all(
        Array.from({ length: 64 }, async () => {
          for (let i = next++; i < PODS; i = next++) {
            await c.client.create(
              fromKubeJson({
                apiVersion: "v1",
                kind: "Pod",
                metadata: { name: `bench-${i}`, namespace: "default", labels: template.metadata.labels },
                spec: template.spec,
              }),
            );
          }
        }),
      );
    } else {
      await c.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "ReplicationController",
          metadata: { name: "bench", namespace: "default" },
          spec: { replicas: PODS, selector: { app: "bench" }, template },
        }),
      );
    }
    await Promise.race([
      done,
      new Promise((_, rej) =>
        setTimeout(
          () => rej(new Error(`timed out: ${runningAt.size}/${PODS} running, ${bound.size} bound, ${created.size} created`)),
          Number(values.timeout) * 1000,
        ),
      ),
    ]);
    const t1 = performance.now();
    clearInterval(progress);
    probing = false;
    await probe;
    await messages.close();
    await consumer.delete().catch(() => undefined);
    const allBound = maxOf(bound.values());
    const firstCreated = minOf(created.values());
    const startup = [...runningAt].map(([n, t]) => t - (created.get(n) ?? t));
    const after = await streamState(jsm);
    const revAfter = Number(await redis.get("{choreo}:rev"));
    redis.disconnect();

    console.log(`end to end: ${PODS} pods Running in ${((t1 - t0) / 1000).toFixed(2)} s → ${(PODS / ((t1 - t0) / 1000)).toFixed(0)} pods/s`);
    console.log(`all created after ${((maxOf(created.values()) - t0) / 1000).toFixed(2)} s`);
    console.log(
      `all bound after ${((allBound - t0) / 1000).toFixed(2)} s; scheduler (first create → last bind): ${(PODS / ((allBound - firstCreated) / 1000)).toFixed(0)} pods/s`,
    );
    console.log(`pod startup (ADDED → Running): p50 ${pct(startup, 50).toFixed(0)} ms, p99 ${pct(startup, 99).toFixed(0)} ms`);
    const writesAfter = await apiWrites();
    const buckets = [...writesAfter.entries()].map(([le, n]) => [le, n - (writesBefore.get(le) ?? 0)] as const).sort((a, b) => a[0] - b[0]);
    const total = buckets.at(-1)?.[1] ?? 0;
    const p99 = buckets.find(([, n]) => n >= total * 0.99)?.[0];
    const p50 = buckets.find(([, n]) => n >= total * 0.5)?.[0];
    console.log(
      `api writes (request duration, bucket bounds): ${total} writes, p50 ≤ ${p50 !== undefined ? (p50 * 1000).toFixed(1) : "?"} ms, p99 ≤ ${p99 !== undefined ? (p99 * 1000).toFixed(1) : "?"} ms`,
    );
    console.log(
      `api writes per pod: ${((revAfter - revBefore) / PODS).toFixed(2)}; bus messages per pod: ${((after.lastRevision - before.lastRevision) / PODS).toFixed(2)}`,
    );
    const perPod = [...byResource].sort((a, b) => b[1] - a[1]).map(([r, n]) => `${r} ${(n / PODS).toFixed(2)}`);
    const podWrites = [...byResource].filter(([r]) => r !== "leases").reduce((a, [, n]) => a + n, 0);
    console.log(`  by resource, per pod: ${perPod.join(", ")} → ${(podWrites / PODS).toFixed(2)} without the nodes' leases`);
    console.log(
      `api probe (a ServiceAccount with view) every 1 s during the run (${probeGet.length} samples): GET p50 ${pct(probeGet, 50).toFixed(0)} / p99 ${pct(probeGet, 99).toFixed(0)} / max ${maxOf(probeGet).toFixed(0)} ms; list of 500 pods p50 ${pct(probeList, 50).toFixed(0)} / p99 ${pct(probeList, 99).toFixed(0)} / max ${maxOf(probeList).toFixed(0)} ms; ${probeFailures} failed`,
    );
    const flowAfter = await flowControl();
    const queued = flowAfter.queued - flowBefore.queued;
    console.log(
      `api flow control: ${queued} requests waited for a seat (mean ${queued ? (((flowAfter.waitSeconds - flowBefore.waitSeconds) / queued) * 1000).toFixed(1) : 0} ms; at most ${maxInQueue} waiting at a 10 s sample), ${flowAfter.refused - flowBefore.refused} refused with 429`,
    );
    console.log(`api audit log: ${((flowAfter.audited - flowBefore.audited) / PODS).toFixed(2)} lines per pod`);
    let rssTotal = 0;
    for (const [n, p] of procs) {
      const a = cpuBefore.get(n);
      const b = cpuAndRss(p.pid);
      const cpu = b.cpuSeconds - (a?.cpuSeconds ?? 0);
      rssTotal += b.rssMb;
      console.log(`  ${n.padEnd(12)} CPU ${cpu.toFixed(1)} s over the run (${((cpu * 1000) / PODS).toFixed(2)} ms per pod), RSS ${b.rssMb.toFixed(0)} MB`);
    }
    console.log(`  RSS of all processes: ${rssTotal.toFixed(0)} MB`);
  }
} finally {
  // Profiled (CHOREO_NODE_AGENT_NODE_ARGS="--cpu-prof --cpu-prof-dir=…", see startCluster): the node-agent writes its profile as it exits;
  // give it longer than the cluster's 5 s.
  if (/--cpu-prof|--heapsnapshot/.test(process.env.CHOREO_NODE_AGENT_NODE_ARGS ?? "")) await c.actors.get("node-agent")?.stop(120_000);
  // Thousands of hollow nodes take a while to drain; do not wait forever.
  await Promise.race([c.stop(), new Promise((r) => setTimeout(r, 30_000))]);
}
// Open JetStream iterators keep the event loop alive after stop: the figures are printed, leave.
process.exit(0);
