import http from "node:http";
import type { AddressInfo } from "node:net";
import { collectDefaultMetrics, Registry } from "prom-client";
import type { Runnable } from "../lifecycle/index.js";

/** A prom-client registry labelled with the service, with Node's default metrics. */
export function createRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** A running metrics endpoint. */
export interface MetricsServer {
  port: number;
  ready: Promise<void>;
  close(): Promise<void>;
}

/** Serves GET /metrics (Prometheus text) and GET /healthz. */
export function serveMetrics(opts: { registry: Registry; port: number; host?: string; healthy?: () => boolean }): MetricsServer {
  const server = http.createServer((req, res) => {
    if (req.url === "/metrics") {
      opts.registry.metrics().then(
        (text) => {
          res.writeHead(200, { "content-type": opts.registry.contentType });
          res.end(text);
        },
        (err: unknown) => {
          res.writeHead(500);
          res.end(String(err));
        },
      );
    } else if (req.url === "/healthz") {
      const ok = opts.healthy?.() ?? true;
      res.writeHead(ok ? 200 : 503, { "content-type": "text/plain" });
      res.end(ok ? "ok" : "unhealthy");
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  const result: MetricsServer = {
    port: 0,
    ready: new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(opts.port, opts.host ?? "127.0.0.1", () => {
        result.port = (server.address() as AddressInfo).port;
        resolve();
      });
    }),
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
  return result;
}

/** serveMetrics as a Runnable that closes on abort. */
export function metricsServer(opts: { registry: Registry; port: number; host?: string; healthy?: () => boolean }): Runnable {
  return {
    name: "metrics",
    async start(signal) {
      const srv = serveMetrics(opts);
      await srv.ready;
      await new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        signal.addEventListener("abort", () => resolve(), { once: true });
      });
      await srv.close();
    },
  };
}
