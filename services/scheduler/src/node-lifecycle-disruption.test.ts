// Node lifecycle leaving a disruption, on a fake clock and fake informers:
// the nodes' Leases come back one by one after a control-plane outage, and
// the last ones back are no failed nodes — every node gets a fresh grace
// period when the disruption ends (Kubernetes' handleDisruption resets each
// node's probe time). A node still silent after that period is a failure.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { emptyMeta } from "@choreo/kit";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { BY_NODE, NodeLifecycle, nodeNameOf, UNREACHABLE_TAINT } from "./node-lifecycle.js";
import { FakeApi, fakeNode } from "./testing.js";

/** A lifecycle on a fake api and a fake clock (`clock.t`), with its nodes, and each node's Lease renewal at the clock's time. */
async function harness(names: string[], graceMs: number) {
  const api = new FakeApi();
  for (const n of names) await api.client.typed("node").create(fakeNode(n));
  const clock = { t: 0 };
  const pods = api.informer("pod");
  pods.addIndexer(BY_NODE, nodeNameOf);
  const nodes = api.informer("node");
  const leases = api.informer("lease");
  const lifecycle = new NodeLifecycle({ client: api.client, nodes, leases, pods, log: silentLogger(), graceMs, evictionMs: 1_000, now: () => clock.t });
  await waitFor(() => nodes.keys().length === names.length, { timeoutMs: 10_000, message: "the node informer filled" });
  /** n renews its Lease at the current (fake) time; resolves once the lifecycle's informer saw it. */
  const renew = async (name: string): Promise<void> => {
    const renewTime = new Date(1_700_000_000_000 + clock.t).toISOString();
    const spec = { holderIdentity: name, leaseDurationSeconds: Math.ceil(graceMs / 1000), acquireTime: renewTime, renewTime, leaseTransitions: 0 };
    const l = await api.client
      .typed("lease")
      .get("kube-node-lease", name)
      .catch(() => undefined);
    if (l) await api.client.typed("lease").update({ ...l, spec });
    else
      await api.client
        .typed("lease")
        .create({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: emptyMeta({ name, namespace: "kube-node-lease" }), spec });
    await waitFor(() => leases.get(`kube-node-lease/${name}`)?.spec?.renewTime === renewTime, { timeoutMs: 10_000, message: `${name}'s lease seen` });
  };
  const tainted = (name: string): boolean =>
    api.values("node").some((n) => n.metadata?.name === name && n.spec?.taints.some((x) => x.key === UNREACHABLE_TAINT));
  return { lifecycle, clock, renew, tainted, signal: new AbortController().signal };
}

describe("node lifecycle after a disruption", () => {
  it("the nodes renewing last after an outage get a fresh grace period; one silent past it is marked", async () => {
    const { lifecycle, clock, renew, tainted, signal } = await harness(["n1", "n2"], 1_000);
    await renew("n1");
    await renew("n2");
    await lifecycle.reconcile("n1", signal);
    await lifecycle.reconcile("n2", signal);
    // The outage: both silent past the grace period — a disruption, nobody marked.
    clock.t = 2_000;
    await lifecycle.reconcile("n1", signal);
    await lifecycle.reconcile("n2", signal);
    assert.equal(lifecycle.stats.markedUnknown, 0, "no node marked in the disruption");
    // n1 is back first; n2, silent for 2.1 s, is checked before its renewal comes in: not a failure.
    await renew("n1");
    clock.t = 2_100;
    await lifecycle.reconcile("n2", signal);
    assert.equal(lifecycle.stats.markedUnknown, 0, "the node renewing last after the outage is not marked");
    assert.ok(!tainted("n2"));
    clock.t = 2_600;
    await renew("n2");
    await lifecycle.reconcile("n2", signal);
    assert.equal(lifecycle.stats.markedUnknown, 0);

    // Later, n2 alone falls silent past its grace period (n1 renewing): a node failure, marked.
    clock.t = 3_500;
    await renew("n1");
    clock.t = 3_700;
    await lifecycle.reconcile("n2", signal);
    assert.equal(lifecycle.stats.markedUnknown, 1, "a node silent past its grace, beside a healthy one, is marked");
    assert.ok(tainted("n2"));
  });

  it("nodes falling silent one after another in an outage are a disruption: the first past its grace is not marked", async () => {
    const names = ["n1", "n2", "n3"];
    const { lifecycle, clock, renew, signal } = await harness(names, 8_000);
    // Renewals every 2 s, out of step; the control plane goes away at 10 s: n1 renewed last at 8.0 s, n2 at 8.7 s, n3 at 9.4 s.
    for (const [at, n] of [
      [8_000, "n1"],
      [8_700, "n2"],
      [9_400, "n3"],
    ] as const) {
      clock.t = at;
      await renew(n);
    }
    // n1 passes its grace first (16 s); n2 and n3 are silent 7.3 s and 6.6 s: together, an outage.
    clock.t = 16_100;
    for (const n of names) await lifecycle.reconcile(n, signal);
    assert.equal(lifecycle.stats.markedUnknown, 0, "no node marked: they fell silent together");
    // A healthy cluster's failed node is still one: n2 and n3 renew, n1 stays silent.
    clock.t = 20_000;
    await renew("n2");
    await renew("n3");
    clock.t = 20_500;
    for (const n of names) await lifecycle.reconcile(n, signal);
    clock.t = 29_000;
    await renew("n2");
    await renew("n3");
    clock.t = 29_100;
    for (const n of names) await lifecycle.reconcile(n, signal);
    assert.equal(lifecycle.stats.markedUnknown, 1, "n1, silent past a fresh grace period beside two healthy nodes, is marked");
  });

  it("a new term of leadership gives every node a fresh grace period: the node renewing last after the api came back is not marked", async () => {
    const { lifecycle, clock, renew, tainted } = await harness(["n1", "n2", "n3"], 8_000);
    for (const n of ["n1", "n2", "n3"]) await renew(n);
    // The leader's term ends in an outage (its own renewals failing); 20 s later the api answers again,
    // n1 and n3 have renewed, n2's renewal is still on its way — and this actor starts a new term.
    clock.t = 20_000;
    await renew("n1");
    await renew("n3");
    const ac = new AbortController();
    const term = lifecycle.start(ac.signal);
    try {
      await new Promise((r) => setTimeout(r, 300));
      await lifecycle.reconcile("n2", ac.signal);
      assert.equal(lifecycle.stats.markedUnknown, 0, "n2, silent 20 s by the last term's reckoning, has a fresh grace period");
      assert.ok(!tainted("n2"));
      // Still silent a whole grace period into the term, beside two renewing nodes: a node failure.
      clock.t = 28_500;
      await renew("n1");
      await renew("n3");
      await lifecycle.reconcile("n2", ac.signal);
      assert.equal(lifecycle.stats.markedUnknown, 1);
      assert.ok(tainted("n2"));
    } finally {
      ac.abort();
      await term;
    }
  });
});
