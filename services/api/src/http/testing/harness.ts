// Test harness: a gateway over MemoryHandlers on loopback, and a tiny client.
import http from "node:http";
import https from "node:https";
import { silentLogger } from "@choreo/kit/log";
import type { LogsHandler } from "../../handlers/api-handlers.js";
import { createGateway, type Gateway, type GatewayOptions } from "../gateway.js";
import { MemoryHandlers } from "./memory-handlers.js";

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: Record<string, unknown>;
}

export interface CallOptions {
  body?: string | Buffer | object;
  headers?: Record<string, string>;
  /** https: the CA to trust. */
  ca?: string;
  token?: string;
  /** https: a client certificate and its key (PEM). */
  cert?: string;
  key?: string;
}

/** One request; resolves with the whole response (JSON parsed when it is JSON). */
export function call(base: string, method: string, path: string, opts: CallOptions = {}): Promise<Reply> {
  const url = new URL(path, base);
  const body = opts.body === undefined ? undefined : typeof opts.body === "string" || Buffer.isBuffer(opts.body) ? opts.body : JSON.stringify(opts.body);
  const headers: Record<string, string> = {
    ...(body !== undefined && typeof opts.body === "object" && !Buffer.isBuffer(opts.body) ? { "Content-Type": "application/json" } : {}),
    ...opts.headers,
  };
  if (opts.token) headers["Authorization"] = `Bearer ${opts.token}`;
  // Node sends a DELETE body without framing unless the length is set.
  if (body !== undefined) headers["Content-Length"] = String(Buffer.byteLength(body));
  const mod = url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(
      url,
      { method, headers, ...(opts.ca ? { ca: opts.ca } : {}), ...(opts.cert && opts.key ? { cert: opts.cert, key: opts.key } : {}) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let json: Record<string, unknown> = {};
          try {
            json = JSON.parse(text) as Record<string, unknown>;
          } catch {
            // not JSON
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

export interface TestGateway {
  gateway: Gateway;
  handlers: MemoryHandlers;
  base: string;
  call(method: string, path: string, opts?: CallOptions): Promise<Reply>;
  close(): Promise<void>;
}

/** A gateway on 127.0.0.1 over plain http with MemoryHandlers (no auth unless tokens given). */
export async function startTestGateway(extra: Partial<GatewayOptions> & { logs?: LogsHandler } = {}): Promise<TestGateway> {
  const handlers = new MemoryHandlers();
  const gateway = createGateway({ handlers, log: silentLogger(), ...extra });
  const { httpPort } = await gateway.listen({ host: "127.0.0.1", httpPort: 0 });
  const base = `http://127.0.0.1:${httpPort}`;
  return { gateway, handlers, base, call: (m, p, o) => call(base, m, p, o), close: () => gateway.close() };
}

/** Polls until `check` returns true; fails after `ms` (default 5 s). */
export async function until(check: () => boolean | Promise<boolean>, ms = 8000, what = "condition"): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A pod manifest. */
export function pod(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, labels: { app: "web" }, ...(extra["metadata"] as object | undefined) },
    spec: { containers: [{ name: "c", image: "nginx" }] },
  };
}
