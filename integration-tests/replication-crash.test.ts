// test-tier: servers
// Kill -9 the replication actor in the middle of scaling an RC to 500 →
// after its restart the RC converges to exactly 500 pods, and at no moment
// did more than 500 active pods exist. The count is followed through the
// event log (an informer), so every intermediate state is seen.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import type { Pod, ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import { podInformer, startCluster, type TestCluster } from "./support/cluster.js";

const TARGET = 500;

describe("replication actor crash", () => {
  let c: TestCluster;
  const ac = new AbortController();
  before(async () => {
    c = await startCluster({
      actors: [
        { name: "node-agent", env: { CHOREO_HOLLOW_NODES: "5", CHOREO_NODE_PODS: "250" } },
        { name: "scheduler" },
        // A small burst spreads the 500 creations over many syncs, so the kill lands in the middle.
        { name: "replication", env: { CHOREO_REPLICATION_BURST: "40", CHOREO_EVENTS: "0" } },
      ],
    });
    await waitFor(async () => (await c.client.list("nodes")).items.length === 5, { timeoutMs: 30_000, message: "5 hollow nodes" });
  });
  after(async () => {
    ac.abort();
    await c?.stop();
  });

  it(`kill -9 while scaling to ${TARGET} → exactly ${TARGET} after the restart, never more`, async () => {
    const rc = unwrap(
      await c.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "ReplicationController",
          metadata: { name: "big", namespace: "default" },
          spec: {
            replicas: 1,
            selector: { app: "big" },
            template: { metadata: { labels: { app: "big" } }, spec: { containers: [{ name: "app", image: "nginx" }] } },
          },
        }),
      ),
    ) as ReplicationController;
    const uid = rc.metadata?.uid ?? "";

    // Active pods controlled by the RC, as the event log tells it.
    const active = new Set<string>();
    let max = 0;
    const count = (p: Pod): void => {
      const name = p.metadata?.name ?? "";
      const mine = p.metadata?.ownerReferences.some((r) => r.uid === uid && r.controller);
      const live = mine && !p.metadata?.deletionTimestamp && p.status?.phase !== "Failed" && p.status?.phase !== "Succeeded";
      if (live) active.add(name);
      else active.delete(name);
      max = Math.max(max, active.size);
    };
    const informer = await podInformer(c);
    informer.addEventHandler({ onAdd: count, onUpdate: (_o, n) => count(n), onDelete: (p) => active.delete(p.metadata?.name ?? "") });
    const running = informer.start(ac.signal).catch(() => undefined);
    await informer.waitForSync();
    await waitFor(() => active.size === 1, { timeoutMs: 30_000, message: "first pod" });

    await c.client.updateScale("replicationcontrollers", "default", "big", TARGET);
    await waitFor(() => active.size >= 120, { timeoutMs: 60_000, intervalMs: 10, message: "scaling under way" });
    await c.actors.get("replication")?.kill();
    const atKill = active.size;
    assert.ok(atKill < TARGET, `killed in the middle (${atKill} of ${TARGET})`);

    await c.startActor("replication", { CHOREO_EVENTS: "0" });
    await waitFor(
      async () => {
        const st = (unwrap(await c.client.get("replicationcontrollers", "default", "big")) as ReplicationController).status;
        return active.size === TARGET && st?.replicas === TARGET;
      },
      { timeoutMs: 120_000, intervalMs: 200, message: `${TARGET} pods` },
    );
    // Give a wrong second round every chance to show itself.
    await new Promise((r) => setTimeout(r, 2_000));
    const listed = (await c.client.list("pods", { namespace: "default", labelSelector: "app=big" })).items.length;
    console.log(`replication crash: killed at ${atKill}/${TARGET}; converged to ${active.size}, listed ${listed}, max ever ${max}`);
    assert.equal(listed, TARGET);
    assert.equal(active.size, TARGET);
    assert.ok(max <= TARGET, `never more than ${TARGET} (max ${max})`);
    ac.abort();
    await running;
  });
});
