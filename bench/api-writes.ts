// Benchmark of the api's write path: creates and updates per second through
// NATS with 1 and 2 api replicas, latency at a paced 1,000 writes/s, write →
// event delivered latency, the relay backlog, and beside them the raw Redis
// and JetStream numbers on the same machine. Prints its figures.
//   npm run bench:api [-- --ops 4000 --concurrency 256]
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { jetstream, jetstreamManager, DeliverPolicy } from "@nats-io/jetstream";
import { ApiClient } from "@choreo/kit/client";
import { connectBus, EVENT_STREAM } from "@choreo/kit/bus";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { unwrap } from "@choreo/kit";
import { startNats, startRedis } from "@choreo/kit/testing";
import { startCluster, type TestCluster } from "@choreo/integration-tests/support/cluster";

const { values } = parseArgs({
  options: { ops: { type: "string", default: "4000" }, concurrency: { type: "string", default: "256" }, seconds: { type: "string", default: "5" } },
});
const OPS = Number(values.ops);
const CONC = Number(values.concurrency);
const PACED_SECONDS = Number(values.seconds);

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};
const fmt = (ms: number): string => `${ms.toFixed(1)} ms`;

const event = (run: string, i: number) =>
  fromKubeJson({
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: `${run}-${i}`, namespace: "default", labels: { run } },
    involvedObject: { kind: "Pod", name: `p${i}`, namespace: "default" },
    reason: "Bench",
    message: "m",
  });

async function backlogSampler(c: TestCluster): Promise<{ stop(): Promise<{ max: number; last: number }> }> {
  const r = new Redis(c.redis.url);
  let max = 0;
  let last = 0;
  let on = true;
  const loop = (async () => {
    while (on) {
      last = await r.xlen("{choreo}:changes");
      max = Math.max(max, last);
      await new Promise((res) => setTimeout(res, 100));
    }
  })();
  return {
    async stop() {
      on = false;
      await loop;
      // Let the relay drain, then read the rest.
      for (let i = 0; i < 50 && (last = await r.xlen("{choreo}:changes")) > 0; i++) await new Promise((res) => setTimeout(res, 100));
      r.disconnect();
      return { max, last };
    },
  };
}

async function closedLoop(
  clients: ApiClient[],
  n: number,
  conc: number,
  op: (api: ApiClient, i: number) => Promise<unknown>,
): Promise<{ rate: number; lat: number[] }> {
  const lat: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: conc }, async (_, w) => {
      const api = clients[w % clients.length]!;
      for (let i = next++; i < n; i = next++) {
        const s = performance.now();
        await op(api, i);
        lat.push(performance.now() - s);
      }
    }),
  );
  return { rate: n / ((performance.now() - t0) / 1000), lat };
}

async function paced(api: ApiClient, perSecond: number, seconds: number, run: string): Promise<number[]> {
  const lat: number[] = [];
  const total = perSecond * seconds;
  const t0 = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    pending.push(api.create(event(run, i)).then(() => void lat.push(performance.now() - due)));
  }
  await Promise.all(pending);
  return lat;
}

async function apiPhase(apis: number): Promise<void> {
  const c = await startCluster({ apis, env: { CHOREO_LOG_LEVEL: "error" } });
  try {
    const conns = await Promise.all(Array.from({ length: 4 }, (_, i) => connectBus(c.nats.url, `bench-${i}`)));
    const clients = conns.map((nc) => new ApiClient(nc, { timeoutMs: 60_000 }));
    // warm-up
    await closedLoop(clients, 500, 64, (api, i) => api.create(event("warm", i)));
    let sampler = await backlogSampler(c);
    const creates = await closedLoop(clients, OPS, CONC, (api, i) => api.create(event(`c${apis}`, i)));
    let backlog = await sampler.stop();
    console.log(
      `[${apis} api] create: ${creates.rate.toFixed(0)}/s  p50 ${fmt(pct(creates.lat, 50))}  p99 ${fmt(pct(creates.lat, 99))}  (concurrency ${CONC}, ${OPS} ops)  relay backlog max ${backlog.max}, after ${backlog.last}`,
    );

    const objs = await clients[0]!.list("events", { namespace: "default", labelSelector: `run=c${apis}` });
    const items = objs.items.map((o) => unwrap(o));
    sampler = await backlogSampler(c);
    const updates = await closedLoop(clients, items.length, CONC, async (api, i) => {
      const v = structuredClone(items[i]!);
      v.metadata!.labels["touched"] = "yes";
      await api.update({ kind: { $case: "event", value: v } as never });
    });
    backlog = await sampler.stop();
    console.log(
      `[${apis} api] update: ${updates.rate.toFixed(0)}/s  p50 ${fmt(pct(updates.lat, 50))}  p99 ${fmt(pct(updates.lat, 99))}  relay backlog max ${backlog.max}, after ${backlog.last}`,
    );

    sampler = await backlogSampler(c);
    const lat = await paced(clients[0]!, 1000, PACED_SECONDS, `p${apis}`);
    backlog = await sampler.stop();
    console.log(
      `[${apis} api] paced 1000 writes/s for ${PACED_SECONDS} s: p50 ${fmt(pct(lat, 50))}  p99 ${fmt(pct(lat, 99))}  max ${fmt(Math.max(...lat))}  relay backlog max ${backlog.max}, after ${backlog.last}`,
    );

    if (apis === 1) {
      // write → event delivered: an ordered consumer on the log, writes at 200/s.
      const js = jetstream(conns[1]!);
      const jsm = await jetstreamManager(conns[1]!);
      const info = await jsm.streams.info(EVENT_STREAM);
      const consumer = await js.consumers.get(EVENT_STREAM, {
        filter_subjects: "choreo.ev.events.default.*",
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: info.state.last_seq + 1,
      });
      const sent = new Map<string, number>();
      const delivered: number[] = [];
      const messages = await consumer.consume();
      const reader = (async () => {
        for await (const m of messages) {
          const name = m.subject.split(".").pop() ?? "";
          const t = sent.get(name);
          if (t !== undefined) delivered.push(performance.now() - t);
          if (delivered.length >= 1000) break;
        }
      })();
      for (let i = 0; i < 1000; i++) {
        sent.set(`d-${i}`, performance.now());
        void clients[0]!.create(event("d", i));
        await new Promise((r) => setTimeout(r, 5));
      }
      await reader;
      await messages.close();
      console.log(`[${apis} api] write → event delivered: p50 ${fmt(pct(delivered, 50))}  p99 ${fmt(pct(delivered, 99))}`);
    }
    await Promise.all(conns.map((nc) => nc.close()));
  } finally {
    await c.stop();
  }
}

async function rawPhase(): Promise<void> {
  const [nats, redis] = await Promise.all([startNats(), startRedis()]);
  try {
    const r = new Redis(redis.url, { enableAutoPipelining: true });
    const n = 50_000;
    let t0 = performance.now();
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        r.eval("local v = redis.call('INCR', KEYS[1]); redis.call('HSET', KEYS[2] .. v, 'v', ARGV[1]); return v", 2, "{b}:rev", "{b}:o:", `value-${i}`),
      ),
    );
    console.log(`[raw] Redis Lua INCR+HSET pipelined: ${(n / ((performance.now() - t0) / 1000)).toFixed(0)}/s`);
    r.disconnect();
    const nc = await connectBus(nats.url, "bench-raw");
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "RAW", subjects: ["raw.>"] });
    const js = jetstream(nc);
    const payload = new Uint8Array(600);
    t0 = performance.now();
    const m = 30_000;
    const window: Promise<unknown>[] = [];
    for (let i = 0; i < m; i++) {
      window.push(js.publish(`raw.${i % 100}`, payload));
      if (window.length >= 1000) await Promise.all(window.splice(0));
    }
    await Promise.all(window);
    console.log(`[raw] JetStream async publish (1,000 in flight, 600 B): ${(m / ((performance.now() - t0) / 1000)).toFixed(0)}/s`);
    await nc.close();
  } finally {
    await Promise.all([nats.stop(), redis.stop()]);
  }
}

console.log(`choreo api write benchmark — ${new Date().toISOString()} — node ${process.version}`);
await rawPhase();
await apiPhase(1);
await apiPhase(2);
