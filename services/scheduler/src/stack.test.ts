import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SchedulerCache } from "./cache.js";
import { podInfo } from "./framework.js";
import { failureMessage, sampleSize, schedule } from "./stack.js";
import { fakeNode, fakePod } from "./testing.js";

const cacheOf = (...nodes: ReturnType<typeof fakeNode>[]) => {
  const c = new SchedulerCache();
  for (const n of nodes) c.setNode(n);
  return c;
};

describe("schedule (pure)", () => {
  it("picks a feasible node and spreads the pods of one controller", () => {
    const c = cacheOf(fakeNode("a"), fakeNode("b"), fakeNode("c"));
    const placed = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const p = podInfo(fakePod(`p${i}`, { cpu: "100m", owner: "rc" }));
      const d = schedule(p, c);
      assert.ok("node" in d);
      c.assume(p, d.node);
      placed.add(d.node);
    }
    assert.equal(placed.size, 3);
  });

  it("explains a failure with Kubernetes' wording", () => {
    const c = cacheOf(
      fakeNode("a", { cpu: "1" }),
      fakeNode("b", { cpu: "1" }),
      fakeNode("c", { cpu: "1" }),
      fakeNode("d", { labels: { zone: "x" } }),
      fakeNode("e", { labels: { zone: "x" } }),
    );
    const d = schedule(podInfo(fakePod("p", { cpu: "2", selector: { zone: "y" } })), c);
    assert.ok("reasons" in d);
    assert.deepEqual(d.reasons, { "node(s) didn't match Pod's node affinity/selector": 5 });
    const d2 = schedule(
      podInfo(fakePod("p", { cpu: "2" })),
      cacheOf(
        fakeNode("a", { cpu: "1" }),
        fakeNode("b", { cpu: "1" }),
        fakeNode("c", { cpu: "1" }),
        fakeNode("d", { ready: "False", cpu: "1" }),
        fakeNode("e", { ready: "False", cpu: "1" }),
      ),
    );
    assert.ok("reasons" in d2);
    assert.equal(failureMessage(d2), "0/5 nodes are available: 2 node(s) were not ready, 3 Insufficient cpu.");
  });

  it("never overcommits: assumed pods count until forgotten", () => {
    const c = cacheOf(fakeNode("a", { cpu: "1" }));
    const p1 = podInfo(fakePod("p1", { cpu: "600m" }));
    c.assume(p1, "a");
    const p2 = podInfo(fakePod("p2", { cpu: "600m" }));
    assert.ok("reasons" in schedule(p2, c));
    c.forget("default/p1");
    assert.deepEqual(schedule(p2, c), { node: "a" });
  });

  it("an informer update confirming the bind replaces the assumption; a finished pod frees the node", () => {
    const c = cacheOf(fakeNode("a", { cpu: "1" }));
    const p1 = fakePod("p1", { cpu: "600m" });
    c.assume(podInfo(p1), "a");
    c.setPod(fakePod("p1", { cpu: "600m", node: "a" }));
    assert.equal(c.isAssumed("default/p1"), false);
    assert.equal(c.node("a")!.requested.milliCpu, 600);
    const finished = fakePod("p1", { cpu: "600m", node: "a" });
    finished.status = {
      phase: "Succeeded",
      conditions: [],
      message: "",
      reason: "",
      nominatedNodeName: "",
      hostIp: "",
      podIp: "",
      podIps: [],
      startTime: "",
      initContainerStatuses: [],
      containerStatuses: [],
      qosClass: "",
      hostIps: [],
      ephemeralContainerStatuses: [],
      resize: "",
      resourceClaimStatuses: [],
    };
    c.setPod(finished);
    assert.equal(c.node("a")!.requested.milliCpu, 0);
  });

  it("samples: stops after max(100, 10%) feasible nodes at scale", () => {
    assert.equal(sampleSize(50), 50);
    assert.equal(sampleSize(500), 100);
    assert.equal(sampleSize(5000), 500);
    const c = new SchedulerCache();
    for (let i = 0; i < 2000; i++) c.setNode(fakeNode(`n${i}`));
    let filtered = 0;
    const counting = { name: "count", resolvableByEviction: false, filter: () => (filtered++, []) };
    assert.ok("node" in schedule(podInfo(fakePod("p")), c, { filters: [counting] }));
    assert.equal(filtered, 200);
  });
});
