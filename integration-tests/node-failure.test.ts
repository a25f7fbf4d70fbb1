// test-tier: servers
// A node agent dies: its nodes go NotReady within the grace period, their
// pods are evicted, and the RC's replacements run elsewhere. Real
// nats-server, redis-server, api, scheduler (with the node lifecycle),
// replication and two node-agent processes of two hollow nodes each.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import type { Event, Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { startCluster, type TestCluster } from "./support/cluster.js";

describe("node failure", () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster({
      actors: [
        { name: "node-agent", as: "agents-a", env: { CHOREO_HOLLOW_NODES: "2", CHOREO_NODE_NAME_PREFIX: "a-", CHOREO_HOLLOW_FIRST_INDEX: "0" } },
        { name: "node-agent", as: "agents-b", env: { CHOREO_HOLLOW_NODES: "2", CHOREO_NODE_NAME_PREFIX: "b-", CHOREO_HOLLOW_FIRST_INDEX: "2" } },
        { name: "scheduler" },
        { name: "replication" },
      ],
    });
    await waitFor(async () => (await c.client.list("nodes")).items.length === 4, { timeoutMs: 30_000, message: "4 hollow nodes" });
  });
  after(async () => {
    await c?.stop();
  });

  it("an agent killed -9 → its nodes go NotReady with the unreachable taint, their pods are evicted and replaced on the live nodes", async () => {
    const pods = async (): Promise<Pod[]> =>
      (await c.client.list("pods", { namespace: "default", labelSelector: "app=survivor" })).items.map((o) => unwrap(o) as Pod);
    const running = (ps: Pod[]) => ps.filter((p) => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp);
    await c.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "ReplicationController",
        metadata: { name: "survivor", namespace: "default" },
        spec: {
          replicas: 4,
          selector: { app: "survivor" },
          template: { metadata: { labels: { app: "survivor" } }, spec: { containers: [{ name: "app", image: "nginx" }] } },
        },
      }),
    );
    await waitFor(async () => running(await pods()).length === 4, { timeoutMs: 30_000, message: "4 running" });
    const onA = running(await pods()).filter((p) => p.spec?.nodeName?.startsWith("a-"));
    assert.ok(onA.length > 0, "some pods run on the nodes about to die (spread)");

    const t0 = Date.now();
    await c.actors.get("agents-a")?.kill();
    const ready = async (name: string) => (unwrap(await c.client.get("nodes", "", name)) as Node).status?.conditions.find((x) => x.type === "Ready");
    await waitFor(async () => (await ready("a-0"))?.status === "Unknown" && (await ready("a-1"))?.status === "Unknown", {
      timeoutMs: 30_000,
      intervalMs: 100,
      message: "a-* NotReady",
    });
    const notReadyMs = Date.now() - t0;
    const a0 = unwrap(await c.client.get("nodes", "", "a-0")) as Node;
    assert.ok(
      a0.spec?.taints.some((t) => t.key === "node.kubernetes.io/unreachable" && t.effect === "NoExecute"),
      "unreachable taint",
    );
    assert.equal((await ready("b-2"))?.status, "True", "the live nodes stay Ready");

    await waitFor(async () => (await pods()).every((p) => !p.spec?.nodeName?.startsWith("a-")), {
      timeoutMs: 30_000,
      intervalMs: 100,
      message: "pods evicted from a-*",
    });
    const evictedMs = Date.now() - t0;
    await waitFor(
      async () => {
        const r = running(await pods());
        return r.length === 4 && r.every((p) => p.spec?.nodeName?.startsWith("b-"));
      },
      { timeoutMs: 30_000, intervalMs: 100, message: "4 running on b-*" },
    );
    const replacedMs = Date.now() - t0;
    console.log(
      `node failure: NotReady after ${notReadyMs} ms, pods evicted after ${evictedMs} ms, replacements Running after ${replacedMs} ms (grace 8 s, eviction 5 s)`,
    );

    const events = (await c.client.list("events", { namespace: "default" })).items.map((o) => unwrap(o) as Event);
    assert.ok(
      events.some((e) => e.reason === "NodeNotReady" && e.involvedObject?.name === "a-0"),
      "NodeNotReady event",
    );
    assert.ok(
      events.some((e) => e.reason === "TaintManagerEviction" && onA.some((p) => p.metadata?.name === e.involvedObject?.name)),
      "an eviction event on an evicted pod",
    );
  });
});
