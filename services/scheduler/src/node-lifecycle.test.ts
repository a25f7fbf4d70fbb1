// Node lifecycle on fake informers fed by a fake api (no nats, no redis): a
// silent Lease → Ready=Unknown + taint → pods evicted; a renewed Lease →
// taint removed. integration-tests/node-failure.test.ts makes the claim
// against the real system (agents killed -9, leader election on).
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { emptyMeta, wrap } from "@choreo/kit";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { BY_NODE, markUnknown, NodeLifecycle, nodeNameOf, podsToEvict, UNREACHABLE_TAINT } from "./node-lifecycle.js";
import { FakeApi, fakeNode, fakePod } from "./testing.js";

const WAIT = { timeoutMs: 25_000 };
const taint = { key: UNREACHABLE_TAINT, value: "", effect: "NoExecute", timeAdded: "" };

describe("node lifecycle (pure parts)", () => {
  it("evicts pods that do not tolerate the unreachable taint forever", () => {
    const keep = fakePod("keep", { tolerations: [{ key: UNREACHABLE_TAINT, operator: "Exists", value: "", effect: "NoExecute" }] });
    const timed = fakePod("timed", { tolerations: [{ key: UNREACHABLE_TAINT, operator: "Exists", value: "", effect: "NoExecute", tolerationSeconds: 300 }] });
    assert.deepEqual(
      podsToEvict([keep, timed, fakePod("plain")], taint).map((p) => p.metadata?.name),
      ["timed", "plain"],
    );
  });
  it("marks Ready=Unknown, keeping other conditions", () => {
    const n = markUnknown(fakeNode("a"), "2025-01-01T00:00:00Z");
    assert.equal(n.status?.conditions.find((c) => c.type === "Ready")?.status, "Unknown");
  });
});

describe("node lifecycle on fake informers", () => {
  const ac = new AbortController();
  let done: Promise<void> | undefined;
  after(async () => {
    ac.abort();
    await done?.catch(() => undefined);
  });

  it("a node whose Lease goes silent gets Ready=Unknown and the taint, then loses its pods; renewing clears the taint", async () => {
    const api = new FakeApi();
    const nodes = api.client.typed("node");
    const leases = api.client.typed("lease");
    await nodes.create(fakeNode("n1"));
    const renew = async () => {
      const now = new Date().toISOString();
      try {
        const l = await leases.get("kube-node-lease", "n1");
        await leases.update({ ...l, spec: { ...l.spec!, renewTime: now } });
      } catch {
        await leases.create({
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: emptyMeta({ name: "n1", namespace: "kube-node-lease" }),
          spec: { holderIdentity: "n1", leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: 0 },
        });
      }
    };
    await renew();
    await api.create(wrap("pod", fakePod("victim")));
    await api.bind("default", "victim", "n1");
    const pods = api.informer("pod");
    pods.addIndexer(BY_NODE, nodeNameOf);
    const lifecycle = new NodeLifecycle({
      client: api.client,
      nodes: api.informer("node"),
      leases: api.informer("lease"),
      pods,
      log: silentLogger(),
      graceMs: 1_500,
      evictionMs: 1_000,
    });
    done = lifecycle.start(ac.signal);
    const node = () => api.values("node").find((n) => n.metadata?.name === "n1")!;
    const pod = () => api.values("pod").find((p) => p.metadata?.name === "victim");
    assert.equal(pod()?.spec?.nodeName, "n1");

    // Silence: no renewals.
    // The taint (spec) and Ready=Unknown (status) are two writes: wait for both.
    await waitFor(
      () => {
        const n = node();
        return (n.spec?.taints.some((t) => t.key === UNREACHABLE_TAINT) ?? false) && n.status?.conditions.find((c) => c.type === "Ready")?.status === "Unknown";
      },
      { ...WAIT, message: "tainted and Ready=Unknown" },
    );
    await waitFor(() => pod() === undefined, { ...WAIT, message: "victim evicted" });

    // Back: renewals resume → the taint goes.
    const beat = setInterval(() => void renew().catch(() => undefined), 300);
    try {
      await waitFor(() => !node().spec?.taints.some((t) => t.key === UNREACHABLE_TAINT), { ...WAIT, message: "taint cleared" });
    } finally {
      clearInterval(beat);
    }
    assert.ok(lifecycle.stats.evictedPods >= 1);
  });
});
