// The gateway fuzzer: hostile requests (arbitraries.ts) against a real
// gateway over the real registry on the in-memory storage. Properties: no
// 5xx, no hung request, the store's revision unchanged by every 4xx.
import http from "node:http";
import fc from "fast-check";
import { silentLogger } from "@choreo/kit/log";
import { WatchEvent, type WatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import { createGateway, type Gateway } from "../http/gateway.js";
import { startMemoryRegistry } from "../testing/memory-registry.js";
import type { MemoryStore } from "../storage/memory-store.js";
import { fuzzRequest, manifest, RESOURCES, type FuzzRequest } from "./arbitraries.js";

const TOKEN = "fuzz-token";
/** A request with no response headers (or a 4xx whose body does not end) in this time is hung. */
const HANG_MS = 20_000;
/** A 2xx body still open after this is a stream (watch, follow): the client stops reading. */
const STREAM_MS = 500;
/** Fresh store and gateway every so many cases: deletes (of `default`, of the seeds) pile up otherwise. */
const CASES_PER_TARGET = 2000;

interface Target {
  gateway: Gateway;
  storage: MemoryStore;
  port: number;
  agent: http.Agent;
}

async function startTarget(): Promise<Target> {
  const { registry, storage } = await startMemoryRegistry();
  const gateway = createGateway({ handlers: withListWatch(registry), log: silentLogger(), tokens: [TOKEN] });
  const { httpPort } = await gateway.listen({ host: "127.0.0.1", httpPort: 0 });
  const t: Target = { gateway, storage, port: httpPort ?? (0 as number), agent: new http.Agent({ keepAlive: true, maxSockets: 1 }) };
  // One object of each kind named `web`, so that reads, updates, patches and deletes meet one.
  for (const [prefix, resource, kind, namespaced] of RESOURCES) {
    if (prefix.startsWith("/apis/autoscaling/v1")) continue;
    const apiVersion = prefix === "/api/v1" ? "v1" : prefix.slice("/apis/".length);
    const path = `${prefix}${namespaced ? "/namespaces/default" : ""}/${resource}`;
    await send(t, {
      method: "POST",
      path,
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${TOKEN}` },
      body: Buffer.from(JSON.stringify(manifest(kind, apiVersion))),
      shape: "seed",
    });
  }
  return t;
}

/**
 * The registry with watches answered from the store, not the event log
 * (which needs NATS): the list as ADDED events, then nothing until the end.
 * Watch requests still go through the gateway's parameter handling and the
 * registry's selection (a bad selector is the same 400).
 */
function withListWatch(registry: ApiHandlers): ApiHandlers {
  const handlers = Object.create(registry) as ApiHandlers;
  handlers.watch = async function* (req: WatchRequest, signal: AbortSignal): AsyncIterable<WatchEvent> {
    const list = await registry.list({
      resource: req.resource,
      namespace: req.namespace,
      labelSelector: req.labelSelector,
      fieldSelector: req.fieldSelector,
      limit: 0,
      continue: "",
    });
    for (const object of list.items) yield WatchEvent.fromPartial({ type: "ADDED", object });
    if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
  };
  return handlers;
}

async function stopTarget(t: Target): Promise<void> {
  t.agent.destroy();
  await t.gateway.close();
}

export interface Outcome {
  status: number;
  /** True when the client stopped reading an open 2xx body (a watch, a follow). */
  stream: boolean;
}

/** Sends one request; rejects when it hangs or the connection fails without an answer. */
export function send(t: Pick<Target, "port" | "agent">, r: FuzzRequest): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const headers = { ...r.headers, ...(r.body ? { "Content-Length": String(r.body.length) } : {}) };
    const req = http.request({ host: "127.0.0.1", port: t.port, method: r.method, path: r.path, headers, agent: t.agent });
    const hang = setTimeout(() => {
      req.destroy();
      reject(new Error(`hung: no complete answer in ${HANG_MS} ms`));
    }, HANG_MS);
    req.on("response", (res) => {
      const status = res.statusCode ?? 0;
      let streamTimer: NodeJS.Timeout | undefined;
      if (status < 400) {
        streamTimer = setTimeout(() => {
          clearTimeout(hang);
          res.destroy();
          resolve({ status, stream: true });
        }, STREAM_MS);
      }
      res.resume();
      res.on("end", () => {
        clearTimeout(hang);
        clearTimeout(streamTimer);
        resolve({ status, stream: false });
      });
      res.on("error", () => {
        clearTimeout(hang);
        clearTimeout(streamTimer);
        // Cut after the headers (a 413's Connection: close): the status was answered.
        resolve({ status, stream: false });
      });
    });
    req.on("error", (err) => {
      clearTimeout(hang);
      reject(new Error(`connection failed without an answer: ${err.message}`));
    });
    req.end(r.body);
  });
}

export interface FuzzReport {
  cases: number;
  ms: number;
  /** Status code → count. */
  statuses: Map<number, number>;
  /** Body shape → count. */
  shapes: Map<string, number>;
  streams: number;
}

export interface FuzzOptions {
  numRuns: number;
  seed: number;
  /** Called every `every` cases. */
  progress?: (r: FuzzReport) => void;
  every?: number;
  /** Requests not to send (a known bug, named in a comment where the option is given). */
  skip?: (r: FuzzRequest) => boolean;
}

/** Runs the property; throws fast-check's report (shrunk counterexample, seed, path) on the first failure. */
export async function fuzzGateway(o: FuzzOptions): Promise<FuzzReport> {
  const report: FuzzReport = { cases: 0, ms: 0, statuses: new Map(), shapes: new Map(), streams: 0 };
  const started = Date.now();
  let target = await startTarget();
  let onTarget = 0;
  try {
    await fc.assert(
      fc.asyncProperty(fuzzRequest(TOKEN), async (r) => {
        if (o.skip?.(r)) return;
        if (onTarget++ >= CASES_PER_TARGET) {
          await stopTarget(target);
          target = await startTarget();
          onTarget = 1;
        }
        const before = await target.storage.currentRevision();
        const out = await send(target, r);
        report.cases++;
        report.statuses.set(out.status, (report.statuses.get(out.status) ?? 0) + 1);
        report.shapes.set(r.shape, (report.shapes.get(r.shape) ?? 0) + 1);
        if (out.stream) report.streams++;
        if (o.progress && report.cases % (o.every ?? 10_000) === 0) o.progress({ ...report, ms: Date.now() - started });
        // The target has no logs handler (the node agents answer logs over NATS): pods/log is 501 Not Implemented here by design.
        const noLogsHere = out.status === 501 && /^\/api\/v1\/namespaces\/[^/?]+\/pods\/[^/?]+\/log(\?|$)/.test(r.path);
        if ((out.status >= 500 && !noLogsHere) || out.status < 100) throw new Error(`answered ${out.status}`);
        if (out.status >= 400) {
          const after = await target.storage.currentRevision();
          if (after !== before) throw new Error(`answered ${out.status} but the store's revision moved ${before} → ${after}`);
        }
      }),
      { numRuns: o.numRuns, seed: o.seed, includeErrorInReport: true },
    );
  } finally {
    await stopTarget(target);
  }
  report.ms = Date.now() - started;
  return report;
}

/** The report as lines: cases, time, rate, status codes and body shapes by count. */
export function formatReport(r: FuzzReport): string {
  const sorted = (m: Map<string | number, number>) => [...m].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k}: ${n}`);
  return [
    `${r.cases} cases in ${(r.ms / 1000).toFixed(1)} s (${Math.round(r.cases / Math.max(r.ms / 1000, 0.001))}/s), ${r.streams} streams cut by the client`,
    `status codes: ${sorted(r.statuses).join(", ")}`,
    `bodies: ${sorted(r.shapes).join(", ")}`,
  ].join("\n");
}
