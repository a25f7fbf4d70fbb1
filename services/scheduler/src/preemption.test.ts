import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { addPod, nodeInfo, podInfo, type NodeInfo } from "./framework.js";
import { canPreempt, findPreemption, splitFilters, victimsOn } from "./preemption.js";
import { FILTERS } from "./stack.js";
import { fakeNode, fakePod } from "./testing.js";

function node(name: string, cpu: string, pods: { name: string; cpu: string; priority: number }[]): NodeInfo {
  const n = nodeInfo(fakeNode(name, { cpu }));
  for (const p of pods) addPod(n, podInfo(fakePod(p.name, { cpu: p.cpu, node: name, priority: p.priority })));
  return n;
}

describe("preemption", () => {
  const high = podInfo(fakePod("high", { cpu: "500m", priority: 1000 }));

  it("evicts only what is needed, sparing the most important lower-priority pods", () => {
    const n = node("a", "1", [
      { name: "p1", cpu: "400m", priority: 10 },
      { name: "p2", cpu: "400m", priority: 5 },
    ]);
    assert.deepEqual(
      victimsOn(high, n)?.map((p) => p.key),
      ["default/p2"],
    );
  });

  it("never evicts pods of equal or higher priority; a node where that is not enough is skipped", () => {
    const n = node("a", "1", [{ name: "boss", cpu: "800m", priority: 1000 }]);
    assert.equal(victimsOn(high, n), undefined);
  });

  it("chooses the node with the fewest victims, then the lowest victim priority", () => {
    const a = node("a", "1", [
      { name: "a1", cpu: "300m", priority: 1 },
      { name: "a2", cpu: "300m", priority: 1 },
      { name: "a3", cpu: "300m", priority: 1 },
    ]);
    const b = node("b", "1", [{ name: "b1", cpu: "900m", priority: 50 }]);
    const c = node("c", "1", [{ name: "c1", cpu: "900m", priority: 20 }]);
    const plan = findPreemption(high, { nodes: [a, b, c] });
    assert.equal(plan?.node, "c");
    assert.deepEqual(
      plan?.victims.map((p) => p.key),
      ["default/c1"],
    );
  });

  it("nothing to do when no node can make room; preemptionPolicy Never and priority 0 do not preempt", () => {
    const full = node("a", "1", [{ name: "x", cpu: "900m", priority: 5000 }]);
    assert.equal(findPreemption(high, { nodes: [full] }), undefined);
    const never = podInfo(fakePod("n", { cpu: "500m", priority: 1000 }));
    never.pod.spec!.preemptionPolicy = "Never";
    assert.equal(canPreempt(never), false);
    assert.equal(canPreempt(podInfo(fakePod("z", { cpu: "1" }))), false);
    assert.equal(canPreempt(high), true);
  });
});

describe("preemption's filters", () => {
  it("come from the stack: the ones eviction cannot fix gate a node, the others decide whether the pod fits", () => {
    const { fixed, room } = splitFilters(FILTERS);
    assert.deepEqual(
      fixed.map((f) => f.name),
      ["NodeReady", "NodeAffinity", "TaintToleration"],
    );
    assert.deepEqual(
      room.map((f) => f.name),
      ["NodePorts", "NodeResourcesFit"],
    );
  });
});
