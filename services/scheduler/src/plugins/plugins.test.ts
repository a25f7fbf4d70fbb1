import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { addPod, nodeInfo, podInfo } from "../framework.js";
import { fakeNode, fakePod } from "../testing.js";
import { fitResources } from "./fit-resources.js";
import { hostPorts } from "./host-ports.js";
import { leastAllocated } from "./least-allocated.js";
import { nodeReady } from "./node-ready.js";
import { nodeSelector } from "./node-selector.js";
import { spread } from "./spread.js";
import { taintToleration } from "./taint-toleration.js";

const unreachable = { key: "node.kubernetes.io/unreachable", value: "", effect: "NoExecute", timeAdded: "" };

describe("filters", () => {
  it("node-ready: Ready=True and schedulable only", () => {
    const p = podInfo(fakePod("p"));
    assert.deepEqual(nodeReady.filter(p, nodeInfo(fakeNode("a"))), []);
    assert.deepEqual(nodeReady.filter(p, nodeInfo(fakeNode("a", { ready: "Unknown" }))), ["node(s) were not ready"]);
    assert.deepEqual(nodeReady.filter(p, nodeInfo(fakeNode("a", { unschedulable: true }))), ["node(s) were unschedulable"]);
  });

  it("fit-resources: requests of accounted pods plus this one fit allocatable", () => {
    const n = nodeInfo(fakeNode("a", { cpu: "1", memory: "1Gi", pods: "2" }));
    addPod(n, podInfo(fakePod("x", { cpu: "600m", memory: "512Mi" })));
    assert.deepEqual(fitResources.filter(podInfo(fakePod("p", { cpu: "400m", memory: "512Mi" })), n), []);
    assert.deepEqual(fitResources.filter(podInfo(fakePod("p", { cpu: "500m", memory: "600Mi" })), n), ["Insufficient cpu", "Insufficient memory"]);
    addPod(n, podInfo(fakePod("y")));
    assert.deepEqual(fitResources.filter(podInfo(fakePod("p")), n), ["Too many pods"]);
  });

  it("node-selector: every label must match", () => {
    const n = nodeInfo(fakeNode("a", { labels: { disk: "ssd" } }));
    assert.deepEqual(nodeSelector.filter(podInfo(fakePod("p", { selector: { disk: "ssd" } })), n), []);
    assert.equal(nodeSelector.filter(podInfo(fakePod("p", { selector: { disk: "hdd" } })), n).length, 1);
  });

  it("taint-toleration: NoSchedule/NoExecute taints need a toleration; PreferNoSchedule does not", () => {
    const n = nodeInfo(fakeNode("a", { taints: [unreachable] }));
    assert.deepEqual(taintToleration.filter(podInfo(fakePod("p")), n), ["node(s) had untolerated taint {node.kubernetes.io/unreachable: }"]);
    assert.deepEqual(
      taintToleration.filter(
        podInfo(fakePod("p", { tolerations: [{ key: "node.kubernetes.io/unreachable", operator: "Exists", value: "", effect: "NoExecute" }] })),
        n,
      ),
      [],
    );
    assert.deepEqual(taintToleration.filter(podInfo(fakePod("p", { tolerations: [{ key: "", operator: "Exists", value: "", effect: "" }] })), n), []);
    const soft = nodeInfo(fakeNode("b", { taints: [{ key: "k", value: "v", effect: "PreferNoSchedule", timeAdded: "" }] }));
    assert.deepEqual(taintToleration.filter(podInfo(fakePod("p")), soft), []);
    const eq = nodeInfo(fakeNode("c", { taints: [{ key: "k", value: "v", effect: "NoSchedule", timeAdded: "" }] }));
    assert.deepEqual(
      taintToleration.filter(podInfo(fakePod("p", { tolerations: [{ key: "k", operator: "Equal", value: "v", effect: "NoSchedule" }] })), eq),
      [],
    );
    assert.equal(
      taintToleration.filter(podInfo(fakePod("p", { tolerations: [{ key: "k", operator: "Equal", value: "w", effect: "NoSchedule" }] })), eq).length,
      1,
    );
  });

  it("host-ports: a host port already taken on the node conflicts", () => {
    const n = nodeInfo(fakeNode("a"));
    addPod(n, podInfo(fakePod("x", { hostPort: 8080 })));
    assert.equal(hostPorts.filter(podInfo(fakePod("p", { hostPort: 8080 })), n).length, 1);
    assert.deepEqual(hostPorts.filter(podInfo(fakePod("p", { hostPort: 8081 })), n), []);
  });
});

describe("scorers", () => {
  it("least-allocated prefers the emptier node", () => {
    const busy = nodeInfo(fakeNode("a"));
    addPod(busy, podInfo(fakePod("x", { cpu: "2", memory: "4Gi" })));
    const p = podInfo(fakePod("p", { cpu: "100m" }));
    assert.ok(leastAllocated.score(p, nodeInfo(fakeNode("b"))) > leastAllocated.score(p, busy));
  });

  it("spread prefers nodes with fewer pods of the same controller", () => {
    const a = nodeInfo(fakeNode("a"));
    addPod(a, podInfo(fakePod("x", { owner: "rc1" })));
    const b = nodeInfo(fakeNode("b"));
    const p = podInfo(fakePod("p", { owner: "rc1" }));
    const scores = [spread.score(p, a), spread.score(p, b)];
    spread.normalize!(scores);
    assert.deepEqual(scores, [0, 100]);
  });
});
