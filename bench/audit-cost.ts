// The audit log's cost per request (services/api/src/audit), alone: begin + finish of `n` Metadata-level events as a
// node agent's pod status update, written to a file through the log's FileWriter, on this thread; CPU µs per event.
// `node --import tsx bench/audit-cost.ts [n]`
import { mkdtempSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pino } from "pino";
import { Registry } from "prom-client";
import { openAuditLog, type AuditLog } from "@choreo/api/audit";

const n = Number(process.argv[2] ?? 200_000);
const dir = mkdtempSync(path.join(os.tmpdir(), "audit-cost-"));
const file = path.join(dir, "audit.log");
const metrics = new Registry();
const log = await openAuditLog({ file, log: pino({ level: "error" }), metrics, maxSizeMB: 4096 });
const user = { name: "system:node:hollow-17", uid: "", groups: ["system:nodes", "system:authenticated"], extra: {} };
const attrs = (i: number): Parameters<AuditLog["begin"]>[0]["attrs"] => ({
  user,
  verb: "update",
  resourceRequest: true,
  apiGroup: "",
  apiVersion: "v1",
  resource: "pods",
  subresource: "status",
  namespace: "default",
  name: `bench-rc-${i.toString(36)}`,
  path: "",
});
const run = async (count: number): Promise<{ cpuUs: number; wallMs: number }> => {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const a = attrs(i);
    const e = log.begin({ user, verb: "update", attrs: a, requestURI: `/api/v1/namespaces/default/pods/${a.name}/status`, sourceIP: "127.0.0.1" });
    e?.finish({ code: 200 });
    // A turn of the event loop every 64 requests, as the api's doors give the writer a chance to drain.
    if (i % 64 === 63) await new Promise((r) => setImmediate(r));
  }
  await new Promise((r) => setTimeout(r, 200));
  const c = process.cpuUsage(cpu0);
  return { cpuUs: c.user + c.system, wallMs: performance.now() - t0 };
};
await run(20_000); // warm-up
const r = await run(n);
await log.close();
const dropped = (await metrics.getSingleMetric("choreo_audit_events_dropped_total")?.get())?.values[0]?.value ?? 0;
console.log(
  `audit log, ${n} Metadata events: ${(r.cpuUs / n).toFixed(2)} µs of this process's CPU per event (JSON line + file write), ${(statSync(file).size / (n + 20_000)) | 0} bytes per line, ${dropped} dropped`,
);
if (process.env.KEEP) console.log(file);
else rmSync(dir, { recursive: true, force: true });
