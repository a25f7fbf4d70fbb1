// Benchmark of the api's read path (issue 15, "Lists at 150k"): N pods in
// one api, then a full list in pages of 500 (as informers and kubectl list),
// a selective list (1% of the pods by label), and GETs of one Node (the node
// agents' heartbeat read) — each from Redis (no resourceVersion) and from the
// object cache (resourceVersion "0") — with wall time and the api's CPU per
// request, over NATS (protobuf). Then the api's RSS with and without the
// object cache (a second cluster with CHOREO_OBJECT_CACHE=0, the same pods).
//   npm run bench:list [-- --pods 20000 --gets 4000 --rounds 3]
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { ApiClient } from "@choreo/kit/client";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, type TestCluster } from "@choreo/integration-tests/support/cluster";
import { cpuMs } from "./proc-cpu.js";

const { values } = parseArgs({
  options: {
    pods: { type: "string", default: "20000" },
    gets: { type: "string", default: "4000" },
    rounds: { type: "string", default: "3" },
  },
});
const PODS = Number(values.pods);
const GETS = Number(values.gets);
const ROUNDS = Number(values.rounds);
const PAGE = 500;

const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;

async function createPods(c: TestCluster): Promise<void> {
  await c.client.create(fromKubeJson({ apiVersion: "v1", kind: "Node", metadata: { name: "bench-node" } }));
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      for (let i = next++; i < PODS; i = next++) {
        await c.client.create(
          fromKubeJson({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: `bench-${i}`, namespace: "default", labels: { app: "bench", shard: String(i % 100) } },
            spec: { containers: [{ name: "c", image: "registry.k8s.io/pause:3.10", resources: { requests: { cpu: "1m", memory: "1Mi" } } }] },
          }),
        );
      }
    }),
  );
}

/** A whole list in pages of 500; returns the items seen. */
async function fullList(client: ApiClient, opts: { resourceVersion?: string; labelSelector?: string }): Promise<number> {
  let n = 0;
  let cont = "";
  let first = true;
  do {
    const page = await client.list("pods", {
      namespace: "default",
      limit: PAGE,
      continue: cont,
      ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}),
      // A continued page is at its first page's revision: the resourceVersion goes with the first only.
      ...(first && opts.resourceVersion ? { resourceVersion: opts.resourceVersion } : {}),
    });
    first = false;
    n += page.items.length;
    cont = page.metadata?.continue ?? "";
  } while (cont);
  return n;
}

interface Figure {
  wallMs: number;
  cpuMs: number;
  /** redis-server's CPU meanwhile. */
  redisMs: number;
}

/** The best of `ROUNDS` (least disturbed by the machine's other load) wall and api CPU of `fn`. */
async function measure(c: TestCluster, fn: () => Promise<unknown>): Promise<Figure> {
  const pid = c.apis[0]?.process.pid as number;
  const redisPid = c.redis.process().pid;
  let best: Figure = { wallMs: Infinity, cpuMs: Infinity, redisMs: Infinity };
  for (let r = 0; r < ROUNDS; r++) {
    const c0 = cpuMs(pid);
    const r0 = cpuMs(redisPid);
    const t0 = performance.now();
    await fn();
    const f = { wallMs: performance.now() - t0, cpuMs: cpuMs(pid) - c0, redisMs: cpuMs(redisPid) - r0 };
    if (f.cpuMs < best.cpuMs) best = f;
  }
  return best;
}

async function gets(client: ApiClient, resourceVersion: string | undefined): Promise<void> {
  let left = GETS;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (left-- > 0) await client.get("nodes", "", "bench-node", resourceVersion ? { resourceVersion } : {});
    }),
  );
}

async function run(objectCache: boolean): Promise<Record<string, Figure | number>> {
  const c = await startCluster({ env: { CHOREO_OBJECT_CACHE: objectCache ? "1" : "0" } });
  try {
    const pid = c.apis[0]?.process.pid as number;
    const rssBefore = rssMb(pid);
    const t0 = performance.now();
    await createPods(c);
    const createSeconds = (performance.now() - t0) / 1000;
    // Until the cache (when on) holds every pod: a list with resourceVersion 0 sees them all.
    await waitFor(async () => (await fullList(c.client, { resourceVersion: "0" })) === PODS, { timeoutMs: 300_000, message: "every pod listed" });
    const out: Record<string, Figure | number> = { createSeconds, rssBefore };
    out["list redis"] = await measure(c, () => fullList(c.client, {}));
    out["selective list redis"] = await measure(c, () => fullList(c.client, { labelSelector: "shard=7" }));
    out["get redis"] = await measure(c, () => gets(c.client, undefined));
    if (objectCache) {
      out["list cache"] = await measure(c, () => fullList(c.client, { resourceVersion: "0" }));
      out["selective list cache"] = await measure(c, () => fullList(c.client, { resourceVersion: "0", labelSelector: "shard=7" }));
      out["get cache"] = await measure(c, () => gets(c.client, "0"));
    }
    global.gc?.();
    out["rssAfter"] = rssMb(pid);
    return out;
  } finally {
    await c.stop();
  }
}

console.log(`choreo list benchmark — ${new Date().toISOString()} — ${PODS} pods, pages of ${PAGE}, ${GETS} Node GETs (32 at a time), best of ${ROUNDS}`);
const withCache = await run(true);
const without = await run(false);
const fig = (f: Figure | number | undefined, per: number): string =>
  typeof f === "object"
    ? `${f.wallMs.toFixed(0)} ms wall, api CPU ${f.cpuMs.toFixed(0)} ms (${((f.cpuMs * 1000) / per).toFixed(0)} µs per ${per === GETS ? "GET" : "object"}), redis CPU ${f.redisMs.toFixed(0)} ms`
    : "—";
for (const [what, per] of [
  ["list", PODS],
  ["selective list", PODS / 100],
  ["get", GETS],
] as const) {
  console.log(`${what}: redis ${fig(withCache[`${what} redis`], per)}; object cache ${fig(withCache[`${what} cache`], per)}`);
}
console.log(`without the cache (CHOREO_OBJECT_CACHE=0): list ${fig(without["list redis"], PODS)}; get ${fig(without["get redis"], GETS)}`);
console.log(
  `api RSS: with the object cache ${(withCache["rssBefore"] as number).toFixed(0)} → ${(withCache["rssAfter"] as number).toFixed(0)} MB; without ${(without["rssBefore"] as number).toFixed(0)} → ${(without["rssAfter"] as number).toFixed(0)} MB (${PODS} pods created in ${(withCache["createSeconds"] as number).toFixed(1)} / ${(without["createSeconds"] as number).toFixed(1)} s)`,
);
process.exit(0);
