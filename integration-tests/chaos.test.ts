// test-tier: servers
// A fixed slice of the chaos suite (npm run chaos runs every fault): on one
// cluster of 3 NATS servers (R3 event stream), Redis with Sentinels, two api
// replicas with write durability "log", the actors and 3 hollow nodes —
// kill -9 of an api replica, the Redis primary stopped (SIGSTOP) for 5 s
// (the sentinels fail over, the api leaves the hung primary at once), and
// kill -9 of the event stream's NATS leader, each struck while an RC is
// scaled and a writer writes. After each: converged (exactly the asked pods,
// ready, owned by the RC, the Service's Endpoints listing them), no
// acknowledged write lost, stream sequence == revision, no node taken for
// failed.
import { after, before, describe, it } from "node:test";
import { faults, runFault, startChaosCluster, type ChaosCluster } from "./chaos/chaos.js";
import { withLogsOnFailure } from "./support/cluster.js";

describe("chaos (a fixed slice)", () => {
  let cc: ChaosCluster;
  before(async () => {
    cc = await startChaosCluster({ nodes: 3 });
  });
  after(async () => {
    await cc?.stop();
  });
  const all = faults(5_000);
  for (const name of ["kill -9 of api replica 0", "SIGSTOP of the Redis primary for 5 s", "kill -9 of the event stream's NATS leader (restarted)"]) {
    const fault = all.find((f) => f.name === name)!;
    it(fault.name, () =>
      withLogsOnFailure(cc.c, async () => {
        const r = await runFault(cc, fault);
        console.log(`chaos: ${r.fault}: converged ${r.convergedMs} ms after it cleared (${r.acknowledged} writes acknowledged, ${r.refused} refused)`);
      }),
    );
  }
});
