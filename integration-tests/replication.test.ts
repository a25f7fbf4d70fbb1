// The seeds' scenarios against real nats-server, redis-server, the api and
// the actor processes, with hollow node agents.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import type { Endpoints, Pod, ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import { startCluster, type TestCluster } from "./support/cluster.js";

const rc = (name: string, replicas: number, labels: Record<string, string>) =>
  fromKubeJson({
    apiVersion: "v1", kind: "ReplicationController", metadata: { name, namespace: "default" },
    spec: { replicas, selector: labels, template: { metadata: { labels }, spec: { containers: [{ name: "web", image: "nginx", ports: [{ name: "http", containerPort: 80 }], resources: { requests: { cpu: "100m", memory: "64Mi" } } }] } } },
  });

describe("replicated pods, the seeds' way", () => {
  let c: TestCluster;
  const pods = async (selector: string): Promise<Pod[]> => (await c.client.list("pods", { namespace: "default", labelSelector: selector })).items.map((o) => unwrap(o) as Pod);
  const running = (ps: Pod[]) => ps.filter((p) => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp);
  const endpointIps = async (name: string): Promise<string[]> => {
    try {
      const ep = unwrap(await c.client.get("endpoints", "default", name)) as Endpoints;
      return ep.subsets.flatMap((s) => s.addresses.map((a) => a.ip)).sort();
    } catch {
      return [];
    }
  };
  before(async () => {
    c = await startCluster({
      actors: [
        { name: "node-agent", env: { CHOREO_HOLLOW_NODES: "4" } },
        { name: "scheduler" },
        { name: "replication" },
        { name: "endpoints" },
      ],
    });
    await waitFor(async () => (await c.client.list("nodes")).items.length === 4, { timeoutMs: 30_000, message: "4 hollow nodes" });
    await c.client.create(fromKubeJson({ apiVersion: "v1", kind: "Service", metadata: { name: "web", namespace: "default" }, spec: { selector: { app: "web", stage: "production" }, ports: [{ port: 80, targetPort: "http" }] } }));
  });
  after(async () => {
    await c?.stop();
  });

  it("an RC of 3 → 3 pods on distinct nodes, Running, in the Service's endpoints; scale to 10 and back to 2; a deleted pod is replaced", async () => {
    await c.client.create(rc("web", 3, { app: "web", stage: "production" }));
    await waitFor(async () => running(await pods("app=web")).length === 3, { timeoutMs: 30_000, message: "3 running pods" });
    const ps = running(await pods("app=web"));
    assert.equal(new Set(ps.map((p) => p.spec?.nodeName)).size, 3, "spread over distinct nodes");
    await waitFor(async () => (await endpointIps("web")).length === 3, { timeoutMs: 30_000, message: "3 endpoints" });
    assert.deepEqual(await endpointIps("web"), ps.map((p) => p.status?.podIp ?? "").sort());

    await c.client.updateScale("replicationcontrollers", "default", "web", 10);
    await waitFor(async () => running(await pods("app=web")).length === 10, { timeoutMs: 30_000, message: "10 running" });
    await c.client.updateScale("replicationcontrollers", "default", "web", 2);
    await waitFor(async () => (await pods("app=web")).length === 2, { timeoutMs: 30_000, message: "back to 2" });

    const victim = running(await pods("app=web"))[0]!;
    await c.client.delete("pods", "default", victim.metadata!.name, { gracePeriodSeconds: 0 });
    await waitFor(async () => {
      const now = running(await pods("app=web"));
      return now.length === 2 && !now.some((p) => p.metadata?.name === victim.metadata?.name);
    }, { timeoutMs: 30_000, message: "replacement running" });
    const status = unwrap(await c.client.get("replicationcontrollers", "default", "web")) as ReplicationController;
    await waitFor(async () => ((unwrap(await c.client.get("replicationcontrollers", "default", "web")) as ReplicationController).status?.readyReplicas ?? 0) === 2, { timeoutMs: 30_000, message: "status readyReplicas 2" });
    assert.ok(status.metadata?.generation);
  });

  it("quarantine: removing the production label → a replacement is created, the old pod keeps running without an owner and leaves the Service", async () => {
    const [q] = running(await pods("app=web"));
    assert.ok(q);
    const name = q.metadata!.name;
    await c.client.patch("pods", "default", name, "application/merge-patch+json", { metadata: { labels: { stage: null } } });
    await waitFor(async () => running(await pods("app=web,stage=production")).length === 2, { timeoutMs: 30_000, message: "replacement" });
    await waitFor(async () => !(await endpointIps("web")).includes(q.status?.podIp ?? ""), { timeoutMs: 30_000, message: "quarantined pod leaves the endpoints" });
    const quarantined = unwrap(await c.client.get("pods", "default", name)) as Pod;
    assert.equal(quarantined.status?.phase, "Running", "the quarantined pod keeps running");
    assert.ok(!quarantined.metadata?.ownerReferences.some((o) => o.controller), "no controller any more");
  });
});
