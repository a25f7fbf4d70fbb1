// test-tier: servers
// Priority and preemption (Borg): a full cluster of low-priority pods; a
// high-priority pod that fits nowhere → the scheduler evicts the fewest
// lower-priority pods, the high-priority pod runs, the evicted pods' RC
// replacements wait Pending. Real api, scheduler, replication and a node
// agent process.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import type { Event, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { startCluster, type TestCluster } from "./support/cluster.js";

describe("preemption", () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster({
      actors: [{ name: "node-agent", env: { CHOREO_HOLLOW_NODES: "2", CHOREO_NODE_CPU: "1" } }, { name: "scheduler" }, { name: "replication" }],
    });
    await waitFor(async () => (await c.client.list("nodes")).items.length === 2, { timeoutMs: 30_000, message: "2 hollow nodes" });
  });
  after(async () => {
    await c?.stop();
  });

  it("a high-priority pod on a full cluster evicts the fewest lower-priority pods and runs", async () => {
    const pods = async (selector: string): Promise<Pod[]> =>
      (await c.client.list("pods", { namespace: "default", labelSelector: selector })).items.map((o) => unwrap(o) as Pod);
    const running = (ps: Pod[]) => ps.filter((p) => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp);
    // 4 × 400m on 2 × 1 cpu: both nodes full for another 500m.
    await c.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "ReplicationController",
        metadata: { name: "batch", namespace: "default" },
        spec: {
          replicas: 4,
          selector: { app: "batch" },
          template: {
            metadata: { labels: { app: "batch" } },
            spec: { priority: 10, containers: [{ name: "b", image: "busybox", resources: { requests: { cpu: "400m" } } }] },
          },
        },
      }),
    );
    await waitFor(async () => running(await pods("app=batch")).length === 4, { timeoutMs: 30_000, message: "4 batch pods running" });
    const before = new Set(running(await pods("app=batch")).map((p) => p.metadata?.name));

    await c.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "prod", namespace: "default", labels: { app: "prod" } },
        spec: { priority: 1000, containers: [{ name: "p", image: "nginx", resources: { requests: { cpu: "500m" } } }] },
      }),
    );
    const prod = await waitFor(
      async () => {
        const p = unwrap(await c.client.get("pods", "default", "prod")) as Pod;
        return p.status?.phase === "Running" ? p : undefined;
      },
      { timeoutMs: 30_000, message: "the high-priority pod runs" },
    );

    const survivors = running(await pods("app=batch")).filter((p) => before.has(p.metadata?.name));
    assert.equal(survivors.length, 3, "exactly one victim: the fewest");
    const onProdNode = running(await pods("app=batch")).filter((p) => p.spec?.nodeName === prod.spec?.nodeName);
    assert.equal(onProdNode.length, 1, "the node keeps one batch pod beside prod (400m + 500m ≤ 1 cpu)");
    const pending = (await pods("app=batch")).filter((p) => !p.spec?.nodeName);
    assert.equal(pending.length, 1, "the RC's replacement waits: no room");
    const events = (await c.client.list("events", { namespace: "default" })).items.map((o) => unwrap(o) as Event);
    assert.ok(
      events.some((e) => e.reason === "Preempted" && /Preempted by default\/prod/.test(e.message)),
      "Preempted event on the victim",
    );
  });
});
