// test-tier: servers
// Omega: two scheduler replicas bind 200 pods from their own caches onto
// nodes that cannot hold them all → no pod is bound twice, no node is filled
// past its allocatable cpu, the pods that do not fit stay Pending with
// FailedScheduling, and the schedulers report how many binds lost a race.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { milliCpu } from "@choreo/kit/apimachinery";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { freePort, waitFor } from "@choreo/kit/testing";
import type { Event, Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { podInformer, startCluster, type TestCluster } from "./support/cluster.js";

const PODS = 200;
const NODES = 4;
const NODE_CPU_M = 2000;
const POD_CPU_M = 50; // 40 fit per node: 160 of 200.

describe("two schedulers", () => {
  let c: TestCluster;
  const metricsPorts: number[] = [];
  const ac = new AbortController();
  before(async () => {
    metricsPorts.push(await freePort(), await freePort());
    c = await startCluster({
      actors: [
        { name: "node-agent", env: { CHOREO_HOLLOW_NODES: String(NODES), CHOREO_NODE_CPU: String(NODE_CPU_M / 1000), CHOREO_NODE_PODS: "500" } },
        { name: "scheduler", as: "scheduler-a", env: { CHOREO_IDENTITY: "scheduler-a", CHOREO_METRICS_PORT: String(metricsPorts[0]) } },
        { name: "scheduler", as: "scheduler-b", env: { CHOREO_IDENTITY: "scheduler-b", CHOREO_METRICS_PORT: String(metricsPorts[1]) } },
      ],
    });
    await waitFor(async () => (await c.client.list("nodes")).items.length === NODES, { timeoutMs: 30_000, message: "hollow nodes" });
  });
  after(async () => {
    ac.abort();
    await c?.stop();
  });

  it(`${PODS} pods, 2 schedulers → none bound twice, no node over capacity, conflicts counted`, async () => {
    // Every binding as the event log tells it: a pod's nodeName may be set once and never change.
    const boundTo = new Map<string, string>();
    const rebinds: string[] = [];
    const see = (p: Pod): void => {
      const name = p.metadata?.name ?? "";
      const node = p.spec?.nodeName ?? "";
      if (!node) return;
      const before = boundTo.get(name);
      if (before && before !== node) rebinds.push(`${name}: ${before} → ${node}`);
      boundTo.set(name, node);
    };
    const informer = await podInformer(c);
    informer.addEventHandler({ onAdd: see, onUpdate: (_o, n) => see(n) });
    const watching = informer.start(ac.signal).catch(() => undefined);
    await informer.waitForSync();

    await Promise.all(
      Array.from({ length: PODS }, (_, i) =>
        c.client.create(
          fromKubeJson({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: `p-${i}`, namespace: "default", labels: { app: "omega" } },
            spec: { containers: [{ name: "app", image: "nginx", resources: { requests: { cpu: `${POD_CPU_M}m` } } }] },
          }),
        ),
      ),
    );
    const fit = NODES * Math.floor(NODE_CPU_M / POD_CPU_M);
    await waitFor(() => boundTo.size === fit, { timeoutMs: 60_000, intervalMs: 100, message: `${fit} bound` });
    await new Promise((r) => setTimeout(r, 2_000)); // let any wrong extra bind surface
    assert.equal(boundTo.size, fit, "exactly the pods that fit are bound");
    assert.deepEqual(rebinds, [], "no pod bound twice");

    const pods = (await c.client.list("pods", { namespace: "default", labelSelector: "app=omega" })).items.map((o) => unwrap(o) as Pod);
    const nodes = (await c.client.list("nodes")).items.map((o) => unwrap(o) as Node);
    for (const n of nodes) {
      const name = n.metadata?.name ?? "";
      const used = pods.filter((p) => p.spec?.nodeName === name).length * POD_CPU_M;
      const alloc = Number(milliCpu(n.status?.allocatable["cpu"] ?? "0"));
      assert.ok(used <= alloc, `${name}: ${used}m requested ≤ ${alloc}m allocatable`);
    }
    const pending = pods.filter((p) => !p.spec?.nodeName);
    assert.equal(pending.length, PODS - fit);
    await waitFor(
      async () => {
        const events = (await c.client.list("events", { namespace: "default" })).items.map((o) => unwrap(o) as Event);
        return events.some(
          (e) => e.reason === "FailedScheduling" && e.involvedObject?.name === pending[0]?.metadata?.name && /Insufficient cpu/.test(e.message),
        );
      },
      { timeoutMs: 30_000, message: "FailedScheduling: Insufficient cpu" },
    );

    const counts = async (): Promise<{ scheduled: number; conflicts: number; errors: number }> => {
      const n = { scheduled: 0, conflicts: 0, errors: 0 };
      for (const port of metricsPorts) {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        for (const m of text.matchAll(/^choreo_scheduler_schedule_attempts_total\{[^}]*result="(\w+)"[^}]*\} (\d+)/gm)) {
          if (m[1] === "conflict") n.conflicts += Number(m[2]);
          if (m[1] === "scheduled") n.scheduled += Number(m[2]);
          if (m[1] === "error") n.errors += Number(m[2]);
        }
      }
      return n;
    };
    // A scheduler counts a bind once its answer is back, which under load may come after the watch showed the pod bound.
    let last = await counts();
    await waitFor(async () => (last = await counts()).scheduled >= fit, { timeoutMs: 20_000, message: "the schedulers counted their binds" }).catch(
      () => undefined,
    );
    const { scheduled, conflicts } = last;
    console.log(`two schedulers: ${scheduled} binds, ${conflicts} lost a race and were retried on fresh state; ${pending.length} pods left Pending (no room)`);
    assert.equal(scheduled, fit, `the schedulers' own count of successful binds (${last.errors} attempts ended in an error)`);
    ac.abort();
    await watching;
  });
});
