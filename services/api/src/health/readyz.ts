// GET /readyz as kube-apiserver answers it: 200 `ok`, or 500 naming the failed
// checks; `?verbose` lists every check (`[+]redis ok`, `[-]nats failed`).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Readiness } from "./readiness.js";

/** Answers /readyz from the readiness checks. */
export async function serveReadyz(_req: IncomingMessage, res: ServerResponse, url: URL, readiness: Readiness): Promise<void> {
  const report = await readiness.report();
  const verbose = url.searchParams.has("verbose");
  const lines = report.checks.map((c) => (c.ok ? `[+]${c.name} ok` : `[-]${c.name} failed: reason withheld`));
  const body = verbose || !report.ready ? `${lines.join("\n")}\nreadyz check ${report.ready ? "passed" : "failed"}\n` : "ok";
  res.writeHead(report.ready ? 200 : 500, {
    "Content-Type": "text/plain; charset=utf-8",
    "X-Content-Type-Options": "nosniff",
    "Content-Length": Buffer.byteLength(body),
  });
  res.end(body);
}
