// test-tier: servers
// API Priority and Fairness in a real cluster: an api with only 8 seats takes
// a burst of 600 pods (an RC: replication's creates, the scheduler's binds, 20
// hollow nodes' statuses and Events) → requests wait for seats instead of
// piling into the api, none is refused, every pod runs, no node misses its
// heartbeat (node-high's guaranteed seats). kubectl's retry of a 429 is the
// gateway's test (services/api/src/http/flow-control.test.ts).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import { unwrap } from "@choreo/kit";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";

const PODS = 600;

/** Sums of the api's flow-control metrics by priority level. */
async function flowMetrics(c: TestCluster): Promise<{ waited: Map<string, number>; refused: number }> {
  const text = await (await fetch(`http://127.0.0.1:${c.apis[0]!.metricsPort}/metrics`)).text();
  const waited = new Map<string, number>();
  for (const m of text.matchAll(/^choreo_api_flowcontrol_request_wait_duration_seconds_count\{([^}]*)\} (\d+)/gm)) {
    const level = /priority_level="([^"]+)"/.exec(m[1]!)?.[1] ?? "";
    waited.set(level, (waited.get(level) ?? 0) + Number(m[2]));
  }
  const refused = [...text.matchAll(/^choreo_api_flowcontrol_rejected_requests_total\{[^}]*\} (\d+)/gm)].reduce((a, m) => a + Number(m[1]), 0);
  return { waited, refused };
}

describe("flow control: a pod burst through an api with 8 seats", () => {
  let c: TestCluster;

  before(async () => {
    c = await startCluster({
      env: { CHOREO_API_MAX_REQUESTS_INFLIGHT: "8" },
      actors: [
        { name: "scheduler", env: { CHOREO_NODE_GRACE_SECONDS: "8" } },
        { name: "replication" },
        { name: "node-agent", env: { CHOREO_HOLLOW_NODES: "20", CHOREO_NODE_NAME_PREFIX: "fc-", CHOREO_LEASE_RENEW_MS: "2000", CHOREO_NODE_PODS: "110" } },
      ],
    });
    await waitFor(async () => (await c.client.list("nodes")).items.length === 20, { timeoutMs: 60_000, message: "20 hollow nodes" });
  });
  after(() => c?.stop());

  it("requests queue for seats, none is refused, all pods run, every node stays Ready", () =>
    withLogsOnFailure(c, async () => {
      const before = await flowMetrics(c);
      await c.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "ReplicationController",
          metadata: { name: "burst", namespace: "default" },
          spec: {
            replicas: PODS,
            selector: { app: "burst" },
            template: { metadata: { labels: { app: "burst" } }, spec: { containers: [{ name: "c", image: "pause" }] } },
          },
        }),
      );
      // Every node's Ready condition, sampled through the burst: a heartbeat that waited behind pods would turn one NotReady.
      const notReady = new Set<string>();
      let samples = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          for (const o of (await c.client.list("nodes")).items) {
            const n = unwrap(o) as Node;
            if (n.status?.conditions.find((x) => x.type === "Ready")?.status !== "True") notReady.add(n.metadata?.name ?? "");
          }
          samples++;
          await new Promise((r) => setTimeout(r, 500));
        }
      })();
      try {
        await waitFor(
          async () =>
            (await c.client.list("pods", { namespace: "default", labelSelector: "app=burst" })).items.filter(
              (o) => (unwrap(o) as Pod).status?.phase === "Running",
            ).length === PODS,
          { timeoutMs: 180_000, intervalMs: 1_000, message: `${PODS} pods Running` },
        );
      } finally {
        sampling = false;
        await sampler;
      }
      const after = await flowMetrics(c);
      const waited = [...after.waited].map(([level, n]) => [level, n - (before.waited.get(level) ?? 0)] as const).filter(([, n]) => n > 0);
      assert.ok(
        waited.some(([level]) => level === "workload-high" || level === "system"),
        `requests waited for seats (by level: ${JSON.stringify(waited)})`,
      );
      assert.equal(after.refused - before.refused, 0, "no request was refused");
      assert.deepEqual([...notReady], [], "no node went NotReady");
      assert.ok(samples > 0);
    }));
});
