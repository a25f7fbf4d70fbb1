// GET /livez as kube-apiserver answers it: 200 `ok`, or 500 naming the failed
// checks; `?verbose` lists every check (`[+]ping ok`, `[+]event-loop ok`).
// Liveness says "restart me if this fails": only what a restart can fix.
import type { IncomingMessage, ServerResponse } from "node:http";
import { eventLoopCheck, healthAnswer, HealthChecks } from "@choreo/kit/metrics";

/** The api's liveness checks: `ping` (it answers) and `event-loop` (its loop turned within 10 s). */
export function apiLiveness(): HealthChecks {
  return new HealthChecks({ ping: () => true, "event-loop": eventLoopCheck() });
}

/** Answers /livez from `checks`. */
export async function serveLivez(_req: IncomingMessage, res: ServerResponse, url: URL, checks: HealthChecks): Promise<void> {
  const { status, body } = healthAnswer("livez", await checks.report(), url.searchParams.has("verbose"));
  res.writeHead(status, {
    "Content-Type": "text/plain; charset=utf-8",
    "X-Content-Type-Options": "nosniff",
    "Content-Length": Buffer.byteLength(body),
  });
  res.end(body);
}
