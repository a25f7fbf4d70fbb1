// The scheduler's own loop, without the api: a cache of N nodes, P pending
// pods; pop → schedule (filters on a sample, scorers) → assume, as fast as
// one thread goes. Prints pods/s. npm run bench:scheduler -- [nodes] [pods]
import { podInfo } from "@choreo/scheduler/framework";
import { SchedulerCache } from "@choreo/scheduler/cache";
import { schedule } from "@choreo/scheduler/stack";
import { fakeNode, fakePod } from "@choreo/scheduler/testing";

const NODES = Number(process.argv[2] ?? 5000);
const PODS = Number(process.argv[3] ?? 20000);
const cache = new SchedulerCache();
for (let i = 0; i < NODES; i++) cache.setNode(fakeNode(`n-${i}`, { cpu: "32", memory: "128Gi", pods: "110" }));
// Pods of 20 controllers, with requests, some with a node selector.
const pods = Array.from({ length: PODS }, (_, i) => podInfo(fakePod(`p-${i}`, { cpu: "100m", memory: "128Mi", owner: `rc-${i % 20}` })));
const t0 = performance.now();
let unschedulable = 0;
for (let i = 0; i < pods.length; i++) {
  const info = pods[i]!;
  const d = schedule(info, cache, { start: i });
  if ("node" in d) cache.assume(info, d.node);
  else unschedulable++;
}
const s = (performance.now() - t0) / 1000;
console.log(`scheduler loop: ${NODES} nodes, ${PODS} pods in ${s.toFixed(2)} s → ${(PODS / s).toFixed(0)} pods/s (${unschedulable} unschedulable)`);
