// Benchmark of the api's write path: creates and updates per second through
// NATS with 1 and 2 api replicas, latency at a paced 1,000 writes/s, write →
// event delivered latency, the relay backlog, and beside them the raw Redis
// and JetStream numbers on the same machine; then the HTTP gateway's create,
// get and list in Kubernetes JSON and in Kubernetes protobuf (transcoded to
// JSON at the gateway). Prints its figures.
//   npm run bench:api [-- --ops 4000 --concurrency 256 --phases raw,api,gateway,durability --replicas 1,2]
// The durability phase (not run by default): creates per second and latency on one Redis (today's setup) and on a
// primary + 2 replicas + 3 Sentinels with each write durability (local, replica: WAIT 1, log: answered once in the event log).
// To profile the api: CHOREO_API_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" (see startCluster).
import http from "node:http";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { jetstream, jetstreamManager, DeliverPolicy } from "@nats-io/jetstream";
import { ApiClient } from "@choreo/kit/client";
import { connectBus, EVENT_STREAM } from "@choreo/kit/bus";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { unwrap } from "@choreo/kit";
import { decodeObject, encodeObject, PROTOBUF, type KubeJson } from "@choreo/kit/kube-proto";
import { startNats, startRedis, startRedisHa, type RedisHaHandle } from "@choreo/kit/testing";
import { startCluster, type TestCluster } from "@choreo/integration-tests/support/cluster";
import { cpuMs } from "./proc-cpu.js";

const { values } = parseArgs({
  options: {
    ops: { type: "string", default: "4000" },
    concurrency: { type: "string", default: "256" },
    seconds: { type: "string", default: "5" },
    phases: { type: "string", default: "raw,api,gateway" },
    replicas: { type: "string", default: "1,2" },
    durability: { type: "string", default: "single,local,replica,log" },
  },
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
    const clients = conns.map((nc) => new ApiClient(nc, { timeoutMs: 60_000, token: c.token }));
    // warm-up
    await closedLoop(clients, 500, 64, (api, i) => api.create(event("warm", i)));
    // The api processes' CPU per write (relay included, measured until its backlog drained): steadier than writes/s on a loaded machine.
    const apiCpu = () => c.apis.reduce((sum, a) => sum + cpuMs(a.process.pid), 0);
    const perWrite = (ms: number, n: number) => `api CPU ${((ms * 1000) / n).toFixed(0)} µs/write`;
    let cpu0 = apiCpu();
    let sampler = await backlogSampler(c);
    const creates = await closedLoop(clients, OPS, CONC, (api, i) => api.create(event(`c${apis}`, i)));
    let backlog = await sampler.stop();
    console.log(
      `[${apis} api] create: ${creates.rate.toFixed(0)}/s  p50 ${fmt(pct(creates.lat, 50))}  p99 ${fmt(pct(creates.lat, 99))}  (concurrency ${CONC}, ${OPS} ops)  relay backlog max ${backlog.max}, after ${backlog.last}  ${perWrite(apiCpu() - cpu0, OPS)}`,
    );

    const objs = await clients[0]!.list("events", { namespace: "default", labelSelector: `run=c${apis}` });
    const items = objs.items.map((o) => unwrap(o));
    cpu0 = apiCpu();
    sampler = await backlogSampler(c);
    const updates = await closedLoop(clients, items.length, CONC, async (api, i) => {
      const v = structuredClone(items[i]!);
      v.metadata!.labels["touched"] = "yes";
      await api.update({ kind: { $case: "event", value: v } as never });
    });
    backlog = await sampler.stop();
    console.log(
      `[${apis} api] update: ${updates.rate.toFixed(0)}/s  p50 ${fmt(pct(updates.lat, 50))}  p99 ${fmt(pct(updates.lat, 99))}  relay backlog max ${backlog.max}, after ${backlog.last}  ${perWrite(apiCpu() - cpu0, items.length)}`,
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

// ---- the HTTP gateway in JSON and in protobuf ------------------------------

const benchPod = (run: string, i: number): KubeJson => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: `${run}-${i}`, namespace: "default", labels: { run, app: "web" }, annotations: { "example.com/note": "bench" } },
  spec: {
    containers: [
      {
        name: "web",
        image: "nginx:1.27",
        ports: [{ name: "http", containerPort: 80, protocol: "TCP" }],
        env: [{ name: "MODE", value: "bench" }],
        resources: { requests: { cpu: "100m", memory: "64Mi" }, limits: { cpu: "500m", memory: "128Mi" } },
        readinessProbe: { httpGet: { path: "/", port: "http" }, periodSeconds: 5 },
      },
    ],
    restartPolicy: "Always",
  },
});

type Encoding = "json" | "protobuf";

function request(
  agent: http.Agent,
  base: string,
  token: string,
  enc: Encoding,
  method: string,
  path: string,
  body?: KubeJson,
): Promise<{ status: number; bytes: Buffer }> {
  const payload = body === undefined ? undefined : enc === "json" ? Buffer.from(JSON.stringify(body)) : Buffer.from(encodeObject(body));
  const headers: Record<string, string> = {
    Authorization: `Bearer ${token}`,
    Accept: enc === "json" ? "application/json" : `${PROTOBUF},application/json`,
    ...(payload ? { "Content-Type": enc === "json" ? "application/json" : PROTOBUF, "Content-Length": String(payload.length) } : {}),
  };
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(path, base), { method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, bytes: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(payload);
  });
}

/** `request`, once more on a reset connection (a kept-alive socket the server closed as it was reused). */
async function requestRetrying(...args: Parameters<typeof request>): Promise<{ status: number; bytes: Buffer }> {
  try {
    return await request(...args);
  } catch (err) {
    if ((err as { code?: string }).code !== "ECONNRESET") throw err;
    return request(...args);
  }
}

/** Parses the answer as the client would (JSON.parse or the protobuf transcoder), so both rows pay their decoding. */
function decoded(enc: Encoding, r: { status: number; bytes: Buffer }, want: number): KubeJson {
  if (r.status !== want) throw new Error(`expected ${want}, got ${r.status}: ${r.bytes.toString().slice(0, 300)}`);
  return enc === "json" ? (JSON.parse(r.bytes.toString()) as KubeJson) : decodeObject(r.bytes);
}

async function gatewayPhase(): Promise<void> {
  const c = await startCluster({ apis: 1, env: { CHOREO_LOG_LEVEL: "error" } });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const conc = Math.min(CONC, 64);
  const ops = Math.min(OPS, 2000);
  try {
    const rows: string[] = [];
    // Each encoding twice, alternating, so neither gets the warm (or the busy) half of the run.
    for (const enc of ["json", "protobuf", "json", "protobuf"] as const) {
      const call = (method: string, path: string, body?: KubeJson) => requestRetrying(agent, c.httpUrl, c.token, enc, method, path, body);
      const loop = async (n: number, op: (i: number) => Promise<unknown>, workers = conc) => {
        const lat: number[] = [];
        let next = 0;
        const t0 = performance.now();
        await Promise.all(
          Array.from({ length: workers }, async () => {
            for (let i = next++; i < n; i = next++) {
              const s = performance.now();
              await op(i);
              lat.push(performance.now() - s);
            }
          }),
        );
        return { rate: n / ((performance.now() - t0) / 1000), lat };
      };
      const PODS = "/api/v1/namespaces/default/pods";
      const round = rows.length < 2 ? "a" : "b";
      await loop(200, async (i) => decoded(enc, await call("POST", PODS, benchPod(`warm-${round}-${enc}`, i)), 201));
      const create = await loop(ops, async (i) => decoded(enc, await call("POST", PODS, benchPod(`g${round}-${enc}`, i)), 201));
      const get = await loop(ops, async (i) => decoded(enc, await call("GET", `${PODS}/g${round}-${enc}-${i}`), 200));
      const lists = Math.max(20, Math.floor(ops / 100));
      const list = await loop(lists, async () => decoded(enc, await call("GET", `${PODS}?labelSelector=run%3Dg${round}-${enc}`), 200), 4);
      const size = (await call("GET", `${PODS}/g${round}-${enc}-0`)).bytes.length;
      rows.push(
        `[gateway ${enc}, round ${round}] create ${create.rate.toFixed(0)}/s (p50 ${fmt(pct(create.lat, 50))}, p99 ${fmt(pct(create.lat, 99))})  get ${get.rate.toFixed(0)}/s (p50 ${fmt(pct(get.lat, 50))})  list of ${ops} pods ${list.rate.toFixed(1)}/s at concurrency 4 (p50 ${fmt(pct(list.lat, 50))})  pod ${size} B`,
      );
    }
    for (const r of rows) console.log(r);
    // The transcoding alone, in this process: a stored pod's JSON → protobuf → JSON.
    const sample = JSON.parse(
      (await request(agent, c.httpUrl, c.token, "json", "GET", "/api/v1/namespaces/default/pods/ga-json-0")).bytes.toString(),
    ) as KubeJson;
    const n = 20_000;
    // Warm both paths first (the JIT), then time them.
    for (let i = 0; i < 5_000; i++) JSON.parse(JSON.stringify(decodeObject(encodeObject(sample))));
    let t0 = performance.now();
    for (let i = 0; i < n; i++) decodeObject(encodeObject(sample));
    const proto = ((performance.now() - t0) * 1000) / n;
    t0 = performance.now();
    for (let i = 0; i < n; i++) JSON.parse(JSON.stringify(sample));
    const json = ((performance.now() - t0) * 1000) / n;
    console.log(`[gateway] transcoding a pod JSON → protobuf → JSON: ${proto.toFixed(1)} µs (JSON.stringify + JSON.parse: ${json.toFixed(1)} µs)`);
  } finally {
    agent.destroy();
    await c.stop();
  }
}

/** Creates through one api replica on a single Redis ("single") or on Redis with Sentinels under a write durability. */
async function durabilityPhase(mode: string): Promise<void> {
  const ha: RedisHaHandle | undefined = mode === "single" ? undefined : await startRedisHa({ replicas: 2, sentinels: 3 });
  const env: Record<string, string> = { CHOREO_LOG_LEVEL: "error" };
  if (ha)
    Object.assign(env, {
      CHOREO_REDIS_URL: ha.url,
      CHOREO_REDIS_CREDENTIALS: ha.credentialsFile,
      CHOREO_REDIS_SENTINEL_CREDENTIALS: ha.sentinelCredentialsFile,
      CHOREO_WRITE_DURABILITY: mode,
    });
  const c = await startCluster({ apis: 1, env });
  try {
    const conns = await Promise.all(Array.from({ length: 4 }, (_, i) => connectBus(c.nats.url, `bench-${i}`)));
    const clients = conns.map((nc) => new ApiClient(nc, { timeoutMs: 60_000, token: c.token }));
    await closedLoop(clients, 500, 64, (api, i) => api.create(event("warm", i)));
    const cpu0 = cpuMs(c.apis[0]!.process.pid);
    const creates = await closedLoop(clients, OPS, CONC, (api, i) => api.create(event(`dur-${mode}`, i)));
    const cpu = cpuMs(c.apis[0]!.process.pid) - cpu0;
    const lat = await paced(clients[0]!, 200, PACED_SECONDS, `dur-paced-${mode}`);
    const label = mode === "single" ? "one Redis, local (today)" : `primary + 2 replicas + 3 sentinels, durability ${mode}`;
    console.log(
      `[durability: ${label}] create: ${creates.rate.toFixed(0)}/s  p50 ${fmt(pct(creates.lat, 50))}  p99 ${fmt(pct(creates.lat, 99))} (concurrency ${CONC}, ${OPS} ops)  api CPU ${((cpu * 1000) / OPS).toFixed(0)} µs/write;  paced 200/s: p50 ${fmt(pct(lat, 50))}  p99 ${fmt(pct(lat, 99))}`,
    );
    await Promise.all(conns.map((nc) => nc.close()));
  } finally {
    await c.stop();
    await ha?.stop();
  }
}

const phases = new Set(values.phases.split(","));
console.log(`choreo api write benchmark — ${new Date().toISOString()} — node ${process.version}`);
if (phases.has("raw")) await rawPhase();
if (phases.has("api")) {
  for (const n of values.replicas.split(",")) await apiPhase(Number(n));
}
if (phases.has("gateway")) await gatewayPhase();
if (phases.has("durability")) for (const mode of values.durability.split(",")) await durabilityPhase(mode);
