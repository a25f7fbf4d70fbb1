import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildNode, nodeStatus } from "./node.js";
import { hollowNodeConfig, nodeIpFor, podCidrFor } from "./hollow-nodes.js";

describe("node", () => {
  it("hollow nodes get distinct pod CIDRs and addresses", () => {
    assert.equal(podCidrFor(0), "10.244.0.0/24");
    assert.equal(podCidrFor(3), "10.244.3.0/24");
    assert.equal(podCidrFor(256), "10.245.0.0/24");
    const cidrs = new Set(Array.from({ length: 5000 }, (_, i) => podCidrFor(i)));
    const ips = new Set(Array.from({ length: 5000 }, (_, i) => nodeIpFor(i)));
    assert.equal(cidrs.size, 5000);
    assert.equal(ips.size, 5000);
    assert.equal(nodeIpFor(0), "172.16.0.1");
  });

  it("builds the Node a kubelet registers", () => {
    const n = buildNode(hollowNodeConfig(2), "2025-01-01T00:00:00Z");
    assert.equal(n.metadata?.name, "hollow-2");
    assert.equal(n.metadata?.labels["kubernetes.io/hostname"], "hollow-2");
    assert.equal(n.metadata?.labels["kubernetes.io/os"], "linux");
    assert.equal(n.spec?.podCidr, "10.244.2.0/24");
    assert.deepEqual(n.status?.capacity, { cpu: "4", memory: "16Gi", pods: "110" });
    assert.deepEqual(n.status?.allocatable, n.status?.capacity);
    assert.deepEqual(n.status?.addresses[0], { type: "InternalIP", address: "172.16.0.3" });
    assert.equal(n.status?.nodeInfo?.kubeletVersion, "v1.32.0-choreo");
    assert.equal(n.status?.nodeInfo?.containerRuntimeVersion, "hollow://1");
    const ready = n.status?.conditions.find((c) => c.type === "Ready");
    assert.equal(ready?.status, "True");
    const later = nodeStatus(hollowNodeConfig(2), "2025-01-01T00:05:00Z", n.status);
    const r2 = later.conditions.find((c) => c.type === "Ready");
    assert.equal(r2?.lastHeartbeatTime, "2025-01-01T00:05:00Z");
    assert.equal(r2?.lastTransitionTime, "2025-01-01T00:00:00Z", "still True: transition kept");
  });

  it("a real node reports the machine as capacity and less its reserve as allocatable", () => {
    const cfg = { ...hollowNodeConfig(1), cpu: "1900m", memory: "1000Ki", capacity: { cpu: "2", memory: "2000Ki" } };
    const s = nodeStatus(cfg, "2025-01-01T00:00:00Z");
    assert.deepEqual(s.capacity, { cpu: "2", memory: "2000Ki", pods: "110" });
    assert.deepEqual(s.allocatable, { cpu: "1900m", memory: "1000Ki", pods: "110" });
  });
});
