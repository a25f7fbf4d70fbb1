import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { rejects } from "../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";

describe("ClusterIP allocation", () => {
  // On the in-memory storage: allocation is the storage's, no server needed.
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  it("allocates unique ClusterIPs from the range and releases them on delete", async () => {
    const svc = (name: string, clusterIP?: string) =>
      fromKubeJson({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name, namespace: "default" },
        spec: { selector: { app: "web" }, ports: [{ port: 80 }], ...(clusterIP ? { clusterIP } : {}) },
      });
    const ips = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const v = unwrap(await s.client.create(svc(`s${i}`))) as Service;
      assert.match(v.spec?.clusterIp ?? "", /^10\.96\.\d+\.\d+$/);
      assert.equal(v.spec?.ports[0]?.targetPort?.value?.value, 80);
      ips.add(v.spec?.clusterIp ?? "");
    }
    assert.equal(ips.size, 20);
    const fixed = unwrap(await s.client.create(svc("fixed", "10.96.200.7"))) as Service;
    assert.equal(fixed.spec?.clusterIp, "10.96.200.7");
    await rejects(s.client.create(svc("taken", "10.96.200.7")), 422, "Invalid", /provided IP is already allocated/);
    await rejects(s.client.create(svc("outside", "10.1.0.1")), 422, "Invalid", /not in the valid range/);
    await s.client.delete("services", "default", "fixed");
    const again = unwrap(await s.client.create(svc("fixed2", "10.96.200.7"))) as Service;
    assert.equal(again.spec?.clusterIp, "10.96.200.7", "released on delete");
  });
});
