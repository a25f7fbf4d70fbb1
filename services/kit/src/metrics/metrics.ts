import http from "node:http";
import type { AddressInfo } from "node:net";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Runnable } from "../lifecycle/index.js";
import { healthAnswer, HealthChecks } from "./health.js";

/** A prom-client registry labelled `{ service }`, with Node's default metrics. */
export function createRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** A running metrics endpoint. */
export interface MetricsServer {
  /** The port actually bound (meaningful once `ready` resolved; port 0 picks a free one). */
  readonly port: number;
  /** Resolves once listening; rejects if the port cannot be bound. */
  readonly ready: Promise<void>;
  /** Stops listening and drops open connections. */
  close(): Promise<void>;
}

/** Options of {@link serveMetrics}. */
export interface ServeMetricsOptions {
  registry: Registry;
  port: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** /healthz answers 200 "ok" while true, else 503 (default: always healthy). */
  healthy?: () => boolean;
  /** The checks of `GET /livez` (restart the process if they fail); default: `ping` alone. */
  livez?: HealthChecks;
  /** The checks of `GET /readyz` (the process does its work: bus connected, informers synced…); default: `ping` alone. */
  readyz?: HealthChecks;
}

const PING = new HealthChecks({ ping: () => true });

/** Serves `GET /metrics` (Prometheus text format), `GET /healthz`, and `GET /livez` and `/readyz` (named checks, `?verbose`). */
export function serveMetrics(opts: ServeMetricsOptions): MetricsServer {
  const server = http.createServer((req, res) => {
    const [path, query = ""] = (req.url ?? "/").split("?");
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
    } else if (path === "/metrics") {
      opts.registry.metrics().then(
        (text) => {
          res.writeHead(200, { "content-type": opts.registry.contentType });
          res.end(text);
        },
        (err: unknown) => {
          res.writeHead(500, { "content-type": "text/plain" });
          res.end(String(err));
        },
      );
    } else if (path === "/livez" || path === "/readyz") {
      const endpoint = path.slice(1);
      const checks = (path === "/livez" ? opts.livez : opts.readyz) ?? PING;
      const verbose = new URLSearchParams(query).has("verbose");
      checks.report().then(
        (report) => {
          const { status, body } = healthAnswer(endpoint, report, verbose);
          res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" });
          res.end(body);
        },
        () => res.writeHead(500, { "content-type": "text/plain" }).end(`${endpoint} check failed\n`),
      );
    } else if (path === "/healthz") {
      let ok: boolean;
      try {
        ok = opts.healthy?.() ?? true;
      } catch {
        ok = false;
      }
      res.writeHead(ok ? 200 : 503, { "content-type": "text/plain" });
      res.end(ok ? "ok" : "unhealthy");
    } else {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
    }
  });
  let port = opts.port;
  let closed: Promise<void> | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host ?? (process.env["CHOREO_METRICS_HOST"] || "127.0.0.1"), () => {
      server.off("error", reject);
      port = (server.address() as AddressInfo).port;
      resolve();
    });
  });
  return {
    get port(): number {
      return port;
    },
    ready,
    close(): Promise<void> {
      closed ??= new Promise<void>((resolve) => {
        if (!server.listening) {
          resolve();
          return;
        }
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

/** {@link serveMetrics} as a Runnable: listens until the signal aborts, then closes. */
export function metricsServer(opts: ServeMetricsOptions): Runnable {
  return {
    name: "metrics",
    async start(signal: AbortSignal): Promise<void> {
      const srv = serveMetrics(opts);
      await srv.ready;
      await new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        else signal.addEventListener("abort", () => resolve(), { once: true });
      });
      await srv.close();
    },
  };
}

/**
 * The counter `name` of `registry`, created on first use: several queues or
 * controllers share one metric and tell themselves apart by labels.
 */
export function getOrCreateCounter<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[]): Counter<L> {
  const existing = registry.getSingleMetric(name);
  if (existing instanceof Counter) return existing as Counter<L>;
  if (existing) throw new Error(`metric ${name} is registered with another type`);
  return new Counter<L>({ name, help, labelNames, registers: [registry] });
}

/** The gauge `name` of `registry`, created on first use. */
export function getOrCreateGauge<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[]): Gauge<L> {
  const existing = registry.getSingleMetric(name);
  if (existing instanceof Gauge) return existing as Gauge<L>;
  if (existing) throw new Error(`metric ${name} is registered with another type`);
  return new Gauge<L>({ name, help, labelNames, registers: [registry] });
}

/** The histogram `name` of `registry` (buckets in seconds), created on first use. */
export function getOrCreateHistogram<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
  buckets: number[],
): Histogram<L> {
  const existing = registry.getSingleMetric(name);
  if (existing instanceof Histogram) return existing as Histogram<L>;
  if (existing) throw new Error(`metric ${name} is registered with another type`);
  return new Histogram<L>({ name, help, labelNames, buckets, registers: [registry] });
}

/** Exponential buckets: `count` values from `start`, each `factor` times the last. */
export function exponentialBuckets(start: number, factor: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => start * factor ** i);
}
