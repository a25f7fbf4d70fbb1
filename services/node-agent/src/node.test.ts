import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { conflict, wrap } from "@choreo/kit";
import type { ApiClient } from "@choreo/kit/client";
import type { Node } from "@choreo/kit/gen/choreo/core/v1/core";
import { buildNode, nodeStatus, refreshNodeStatus } from "./node.js";
import { hollowNodeConfig, nodeIpFor, podCidrFor } from "./hollow-nodes.js";

describe("node", () => {
  it("hollow nodes get distinct pod CIDRs and addresses", () => {
    assert.equal(podCidrFor(0), "10.128.0.0/24");
    assert.equal(podCidrFor(3), "10.128.3.0/24");
    assert.equal(podCidrFor(256), "10.129.0.0/24");
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
    assert.equal(n.spec?.podCidr, "10.128.2.0/24");
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

  it("refreshNodeStatus reads its Node with resourceVersion 0 first, and from the store after a conflict (kubelet's tryUpdateNodeStatus)", async () => {
    const cfg = hollowNodeConfig(4);
    const old = "2025-01-01T00:00:00Z";
    const stale = buildNode(cfg, old);
    stale.metadata = { ...(stale.metadata as NonNullable<Node["metadata"]>), resourceVersion: "10" };
    const fresh = structuredClone(stale);
    (fresh.metadata as NonNullable<Node["metadata"]>).resourceVersion = "12";
    const reads: string[] = [];
    const writes: string[] = [];
    // A fake of the api's two reads (the object cache is one revision behind the store) and its compare-and-set.
    const fake = {
      get: (_r: string, _ns: string, _name: string, opts: { resourceVersion?: string } = {}) => {
        reads.push(opts.resourceVersion ?? "");
        return Promise.resolve(wrap("node", opts.resourceVersion === "0" ? stale : fresh));
      },
      typed: () => ({
        updateStatus: (n: Node) => {
          writes.push(n.metadata?.resourceVersion ?? "");
          return n.metadata?.resourceVersion === "12" ? Promise.resolve(n) : Promise.reject(conflict("nodes", cfg.name, "the object has been modified"));
        },
      }),
    };
    await refreshNodeStatus(fake as unknown as ApiClient, cfg, 10_000);
    assert.deepEqual(reads, ["0", ""]);
    assert.deepEqual(writes, ["10", "12"]);
    // A fresh heartbeat read from the cache: no write at all.
    reads.length = 0;
    writes.length = 0;
    stale.status = nodeStatus(cfg, new Date().toISOString(), stale.status);
    await refreshNodeStatus(fake as unknown as ApiClient, cfg, 10_000);
    assert.deepEqual(reads, ["0"]);
    assert.deepEqual(writes, []);
  });
});
