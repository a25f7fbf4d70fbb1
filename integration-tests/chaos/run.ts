// npm run chaos [-- --stop-seconds 30 --only <substring> --hosts]: every
// fault of chaos.ts in turn against one cluster (3 NATS servers, Redis with
// Sentinels, 2 api replicas, the actors, 3 hollow nodes — or, with --hosts,
// 3 test hosts running real pods, a client asking the Service all along, and
// the host cut-off fault), each struck while an RC is scaled and a writer
// writes, each followed by the checks. Prints the time from each fault's
// clearing to converged, the Service requests that failed meanwhile, and a
// summary; exits 1 on the first failed check. --stop-seconds 300 is the
// 5-minute outage.
import { parseArgs } from "node:util";
import { faults, runFault, startChaosCluster, type FaultResult } from "./chaos.js";

const { values } = parseArgs({
  options: { "stop-seconds": { type: "string", default: "30" }, only: { type: "string", multiple: true }, hosts: { type: "boolean" } },
});
const stopMs = Number(values["stop-seconds"]) * 1000;
const chosen = faults(stopMs, values.hosts).filter((f) => !values.only || values.only.some((o) => f.name.includes(o)));
console.log(
  `choreo chaos — ${new Date().toISOString()} — ${chosen.length} faults, SIGSTOP ${stopMs / 1000} s${values.hosts ? ", 3 test hosts with real pods" : ""}`,
);
const cc = await startChaosCluster({ nodes: 3, hosts: values.hosts });
const results: FaultResult[] = [];
let failed = false;
try {
  for (const f of chosen) {
    const t0 = Date.now();
    try {
      const r = await runFault(cc, f);
      results.push(r);
      const asked = r.requests ? `; Service: ${r.requests.failed} of ${r.requests.total} requests failed meanwhile` : "";
      console.log(
        `✔ ${f.name}: converged ${r.convergedMs} ms after it cleared (${r.acknowledged} writes acknowledged, ${r.refused} refused${asked}; ${Date.now() - t0} ms in all)`,
      );
      for (const n of r.notes) console.log(`  ${n}`);
    } catch (err) {
      failed = true;
      console.log(`✖ ${f.name}: ${err instanceof Error ? err.message : String(err)}`);
      console.log(cc.c.logTails(40));
      break;
    }
  }
} finally {
  await cc.stop();
}
console.log(`\n${results.length}/${chosen.length} faults passed; slowest convergence ${Math.max(0, ...results.map((r) => r.convergedMs))} ms`);
process.exit(failed ? 1 : 0);
