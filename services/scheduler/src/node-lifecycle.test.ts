// test-tier: servers
// Node lifecycle against a real api: a silent Lease → Ready=Unknown + taint
// → pods evicted; a renewed Lease → taint removed.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { emptyMeta, unwrap } from "@choreo/kit";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { runAll } from "@choreo/kit/lifecycle";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { startStack, type Stack } from "@choreo/api/testing";
import { buildActors } from "./actors.js";
import { loadConfig } from "./config.js";
import { markUnknown, podsToEvict, UNREACHABLE_TAINT } from "./node-lifecycle.js";
import { fakeNode, fakePod } from "./testing.js";

const WAIT = { timeoutMs: 25_000 };
const taint = { key: UNREACHABLE_TAINT, value: "", effect: "NoExecute", timeAdded: "" };

describe("node lifecycle (pure parts)", () => {
  it("evicts pods that do not tolerate the unreachable taint forever", () => {
    const keep = fakePod("keep", { tolerations: [{ key: UNREACHABLE_TAINT, operator: "Exists", value: "", effect: "NoExecute" }] });
    const timed = fakePod("timed", { tolerations: [{ key: UNREACHABLE_TAINT, operator: "Exists", value: "", effect: "NoExecute", tolerationSeconds: 300 }] });
    assert.deepEqual(podsToEvict([keep, timed, fakePod("plain")], taint).map((p) => p.metadata?.name), ["timed", "plain"]);
  });
  it("marks Ready=Unknown, keeping other conditions", () => {
    const n = markUnknown(fakeNode("a"), "2025-01-01T00:00:00Z");
    assert.equal(n.status?.conditions.find((c) => c.type === "Ready")?.status, "Unknown");
  });
});

describe("node lifecycle against the api", () => {
  let s: Stack;
  const ac = new AbortController();
  let done: Promise<void> | undefined;
  before(async () => {
    s = await startStack();
  });
  after(async () => {
    ac.abort();
    await done?.catch(() => undefined);
    await s?.stop();
  });

  it("a node whose Lease goes silent gets Ready=Unknown and the taint, then loses its pods; renewing clears the taint", async () => {
    const nodes = s.client.typed("node");
    const leases = s.client.typed("lease");
    const want = fakeNode("n1");
    want.metadata!.uid = "";
    const created = await nodes.create({ ...want, status: undefined });
    await nodes.updateStatus({ ...created, status: want.status });
    const renew = async () => {
      const now = new Date().toISOString();
      try {
        const l = await leases.get("kube-node-lease", "n1");
        await leases.update({ ...l, spec: { ...l.spec!, renewTime: now } });
      } catch {
        await leases.create({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: emptyMeta({ name: "n1", namespace: "kube-node-lease" }), spec: { holderIdentity: "n1", leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: 0 } });
      }
    };
    await renew();
    await s.client.create(fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name: "victim", namespace: "default" }, spec: { containers: [{ name: "c", image: "nginx" }] } }));
    await s.client.bind("default", "victim", "n1");
    const actors = buildActors({ client: s.client, nc: s.nc, jsm: s.jsm, log: silentLogger() }, { ...loadConfig({}), graceMs: 1_500, evictionMs: 1_000, leaderElect: true, identity: "test" });
    done = runAll(actors.runnables, ac.signal);
    const node = async () => unwrap(await s.client.get("nodes", "", "n1")) as Node;
    const pod = async () => (await s.client.list("pods", { namespace: "default" })).items.map((o) => unwrap(o) as Pod).find((p) => p.metadata?.name === "victim");
    assert.equal((await pod())?.spec?.nodeName, "n1");

    // Silence: no renewals.
    // The taint (spec) and Ready=Unknown (status) are two writes: wait for both.
    await waitFor(async () => {
      const n = await node();
      return (n.spec?.taints.some((t) => t.key === UNREACHABLE_TAINT) ?? false) && n.status?.conditions.find((c) => c.type === "Ready")?.status === "Unknown";
    }, { ...WAIT, message: "tainted and Ready=Unknown" });
    await waitFor(async () => (await pod()) === undefined, { ...WAIT, message: "victim evicted" });

    // Back: renewals resume → the taint goes.
    const beat = setInterval(() => void renew().catch(() => undefined), 300);
    try {
      await waitFor(async () => !(await node()).spec?.taints.some((t) => t.key === UNREACHABLE_TAINT), { ...WAIT, message: "taint cleared" });
    } finally {
      clearInterval(beat);
    }
    assert.ok(actors.lifecycle!.stats.evictedPods >= 1);
  });
});
