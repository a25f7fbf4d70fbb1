// Node lifecycle on fake informers fed by a fake api (no nats, no redis): a
// silent Lease → Ready=Unknown + taint → pods evicted; a renewed Lease →
// taint removed. integration-tests/node-failure.test.ts makes the claim
// against the real system (agents killed -9, leader election on).
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { emptyMeta, wrap } from "@choreo/kit";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { BY_NODE, disrupted, markUnknown, NodeLifecycle, nodeNameOf, podsToEvict, UNREACHABLE_TAINT } from "./node-lifecycle.js";
import { FakeApi, fakeNode, fakePod } from "./testing.js";

const WAIT = { timeoutMs: 25_000 };
const taint = { key: UNREACHABLE_TAINT, value: "", effect: "NoExecute", timeAdded: "" };

describe("node lifecycle (pure parts)", () => {
  it("a disruption: every node silent, or more than 2 and at least 55% in a cluster of at most 50", () => {
    assert.equal(disrupted(1, 1), true, "a single node silent is a full disruption");
    assert.equal(disrupted(2, 1), false, "one of two: a node failure");
    assert.equal(disrupted(4, 2), false, "two of four: node failures");
    assert.equal(disrupted(5, 3), true, "three of five");
    assert.equal(disrupted(10, 5), false, "half");
    assert.equal(disrupted(100, 60), false, "a large cluster keeps evicting under partial disruption");
    assert.equal(disrupted(100, 100), true);
    assert.equal(disrupted(0, 0), false);
  });
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

  it("a node whose Lease goes silent gets Ready=Unknown and the taint, then loses its pods; renewing clears the taint", async (t) => {
    const api = new FakeApi();
    const nodes = api.client.typed("node");
    const leases = api.client.typed("lease");
    await nodes.create(fakeNode("n1"));
    // n2 stays healthy throughout: one node of two failing is a node failure, not a disruption.
    await nodes.create(fakeNode("n2"));
    const renew = async (name = "n1") => {
      const now = new Date().toISOString();
      try {
        const l = await leases.get("kube-node-lease", name);
        await leases.update({ ...l, spec: { ...l.spec!, renewTime: now } });
      } catch {
        await leases.create({
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: emptyMeta({ name, namespace: "kube-node-lease" }),
          spec: { holderIdentity: name, leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: 0 },
        });
      }
    };
    await renew();
    await renew("n2");
    const healthy = setInterval(() => void renew("n2").catch(() => undefined), 300);
    // A failed assertion must not leave it running (the file then hung until its 300 s timeout).
    t.after(() => clearInterval(healthy));
    await api.create(wrap("pod", fakePod("victim")));
    await api.bind("default", "victim", "n1");
    const pods = api.informer("pod");
    pods.addIndexer(BY_NODE, nodeNameOf);
    // The victim's last version before its deletion, as a watcher sees it. The
    // watcher's view, not the store's, says when it is gone: the store drops
    // the pod at once while the versions before reach watchers a tick later
    // (a check between the two, on a loaded machine, saw no mark).
    let last: Pod | undefined;
    let gone = false;
    api.informer("pod").addEventHandler({ onUpdate: (_, p) => (last = p), onDelete: () => (gone = true) });
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
    await waitFor(() => gone && pod() === undefined, { ...WAIT, message: "victim evicted" });
    const marked = last?.status?.conditions.find((c) => c.type === "DisruptionTarget");
    assert.deepEqual(
      [marked?.status, marked?.reason, marked?.message],
      ["True", "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint"],
      "marked DisruptionTarget before its deletion",
    );

    // Back: renewals resume → the taint goes.
    const beat = setInterval(() => void renew().catch(() => undefined), 300);
    try {
      await waitFor(() => !node().spec?.taints.some((t) => t.key === UNREACHABLE_TAINT), { ...WAIT, message: "taint cleared" });
    } finally {
      clearInterval(beat);
      clearInterval(healthy);
    }
    assert.ok(lifecycle.stats.evictedPods >= 1);
  });

  it("every node silent at once is a disruption (the control plane cut off): no node marked, no pod evicted", async () => {
    const api = new FakeApi();
    for (const n of ["d1", "d2", "d3"]) {
      await api.client.typed("node").create(fakeNode(n));
      await api.create(wrap("pod", fakePod(`on-${n}`)));
      await api.bind("default", `on-${n}`, n);
    }
    const pods = api.informer("pod");
    pods.addIndexer(BY_NODE, nodeNameOf);
    const lifecycle = new NodeLifecycle({
      client: api.client,
      nodes: api.informer("node"),
      leases: api.informer("lease"),
      pods,
      log: silentLogger(),
      graceMs: 300,
      evictionMs: 200,
    });
    const local = new AbortController();
    const run = lifecycle.start(local.signal);
    try {
      // Well past grace + eviction several times over: nothing happens.
      await new Promise((r) => setTimeout(r, 2_000));
      assert.equal(lifecycle.stats.markedUnknown, 0);
      assert.equal(lifecycle.stats.evictedPods, 0);
      assert.equal(api.values("pod").length, 3, "every pod stays");
      assert.ok(api.values("node").every((n) => !n.spec?.taints.some((t) => t.key === UNREACHABLE_TAINT)));
    } finally {
      local.abort();
      await run.catch(() => undefined);
    }
  });
});
