// test-tier: servers
// The seeds' scenarios against real nats-server, redis-server, the api and
// the actor processes, with hollow node agents.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import type { Endpoints, Pod, ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import path from "node:path";
import { ROOT, startCluster, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

const rc = (name: string, replicas: number, labels: Record<string, string>) =>
  fromKubeJson({
    apiVersion: "v1",
    kind: "ReplicationController",
    metadata: { name, namespace: "default" },
    spec: {
      replicas,
      selector: labels,
      template: {
        metadata: { labels },
        spec: {
          containers: [{ name: "web", image: "nginx", ports: [{ name: "http", containerPort: 80 }], resources: { requests: { cpu: "100m", memory: "64Mi" } } }],
        },
      },
    },
  });

describe("replicated pods, the seeds' way", () => {
  let c: TestCluster;
  const pods = async (selector: string): Promise<Pod[]> =>
    (await c.client.list("pods", { namespace: "default", labelSelector: selector })).items.map((o) => unwrap(o) as Pod);
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
      actors: [{ name: "node-agent", env: { CHOREO_HOLLOW_NODES: "4" } }, { name: "scheduler" }, { name: "replication" }, { name: "endpoints" }],
    });
    await waitFor(async () => (await c.client.list("nodes")).items.length === 4, { timeoutMs: 30_000, message: "4 hollow nodes" });
    await c.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "web", namespace: "default" },
        spec: { selector: { app: "web", stage: "production" }, ports: [{ port: 80, targetPort: "http" }] },
      }),
    );
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
    await waitFor(
      async () => {
        const now = running(await pods("app=web"));
        return now.length === 2 && !now.some((p) => p.metadata?.name === victim.metadata?.name);
      },
      { timeoutMs: 30_000, message: "replacement running" },
    );
    const status = unwrap(await c.client.get("replicationcontrollers", "default", "web")) as ReplicationController;
    await waitFor(
      async () => ((unwrap(await c.client.get("replicationcontrollers", "default", "web")) as ReplicationController).status?.readyReplicas ?? 0) === 2,
      { timeoutMs: 30_000, message: "status readyReplicas 2" },
    );
    assert.ok(status.metadata?.generation);

    // What happened, as `choreo describe` and `kubectl describe` tell it (Events from the replication actor, the scheduler and the kubelet).
    const kubeconfig = writeKubeconfig(c);
    const rcOut = await run(process.execPath, [path.join(ROOT, "services/cli/bin/choreo.js"), "describe", "rc", "web"], kubeconfig);
    assert.equal(rcOut.code, 0, rcOut.stderr);
    assert.match(rcOut.stdout, /^Replicas:\s+2 current \/ 2 desired$/m);
    assert.match(rcOut.stdout, /^Pods Status:\s+2 Running \/ 0 Waiting/m);
    assert.match(rcOut.stdout, /Normal\s+SuccessfulCreate\s+.*replication-controller\s+Created pod: web-/);
    assert.match(rcOut.stdout, /Normal\s+SuccessfulDelete\s+.*Deleted pod: web-/);
    // 11 pods created (3, then 7, then a replacement): after 10 similar ones, one Event "(combined from similar events)" counts the rest (client-go's EventCorrelator).
    await waitFor(
      async () => {
        const out = await run("kubectl", ["describe", "rc", "web"], kubeconfig);
        return /Normal\s+SuccessfulCreate\s+.*\(x\d+ over [^)]*\)\s+replication-controller\s+\(combined from similar events\): Created pod: web-/.test(
          out.stdout,
        );
      },
      { timeoutMs: 30_000, message: "kubectl describe rc shows the combined SuccessfulCreate with its count" },
    );
    const podName = running(await pods("app=web"))[0]?.metadata?.name ?? "";
    const podOut = await run("kubectl", ["describe", "pod", podName], kubeconfig);
    assert.equal(podOut.code, 0, podOut.stderr);
    assert.match(podOut.stdout, /Controlled By:\s+ReplicationController\/web/);
    assert.match(podOut.stdout, /Normal\s+Scheduled\s+.*default-scheduler\s+Successfully assigned default\/web-/);
    assert.match(podOut.stdout, /Normal\s+Started\s+.*kubelet\s+Started container web/);
  });

  it("quarantine: removing the production label → a replacement is created, the old pod keeps running without an owner and leaves the Service", async () => {
    const [q] = running(await pods("app=web"));
    assert.ok(q);
    const name = q.metadata!.name;
    await c.client.patch("pods", "default", name, "application/merge-patch+json", { metadata: { labels: { stage: null } } });
    await waitFor(async () => running(await pods("app=web,stage=production")).length === 2, { timeoutMs: 30_000, message: "replacement" });
    await waitFor(async () => !(await endpointIps("web")).includes(q.status?.podIp ?? ""), {
      timeoutMs: 30_000,
      message: "quarantined pod leaves the endpoints",
    });
    const quarantined = unwrap(await c.client.get("pods", "default", name)) as Pod;
    assert.equal(quarantined.status?.phase, "Running", "the quarantined pod keeps running");
    assert.ok(!quarantined.metadata?.ownerReferences.some((o) => o.controller), "no controller any more");
  });

  it("rolling update: v1 with 3 replicas and v2 with 0, one up / one down until v2 has 3 → the Service never has fewer than 2 ready endpoints; then back", async () => {
    const labels = (v: string) => ({ app: "shop", stage: "production", version: v });
    const shop = (v: string, replicas: number) => {
      const o = rc(`shop-${v}`, replicas, labels(v));
      return o;
    };
    await c.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "shop", namespace: "default" },
        spec: { selector: { app: "shop", stage: "production" }, ports: [{ port: 80, targetPort: "http" }] },
      }),
    );
    await c.client.create(shop("v1", 3));
    await c.client.create(shop("v2", 0));
    await waitFor(async () => (await endpointIps("shop")).length === 3, { timeoutMs: 30_000, message: "3 endpoints of v1" });

    // Watch the Service's ready endpoints the whole time.
    let min = Infinity;
    let samples = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const n = (await endpointIps("shop")).length;
        min = Math.min(min, n);
        samples++;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const readyOf = async (v: string) =>
      running(await pods(`app=shop,version=${v}`)).filter((p) => p.status?.conditions.some((x) => x.type === "Ready" && x.status === "True")).length;
    const roll = async (from: string, to: string) => {
      for (let i = 1; i <= 3; i++) {
        await c.client.updateScale("replicationcontrollers", "default", `shop-${to}`, i);
        await waitFor(async () => (await readyOf(to)) === i && (await endpointIps("shop")).length >= 3, { timeoutMs: 30_000, message: `${to} at ${i}` });
        await c.client.updateScale("replicationcontrollers", "default", `shop-${from}`, 3 - i);
        await waitFor(async () => (await pods(`app=shop,version=${from}`)).length === 3 - i, { timeoutMs: 30_000, message: `${from} at ${3 - i}` });
      }
    };
    try {
      await roll("v1", "v2");
      assert.equal(await readyOf("v2"), 3);
      await roll("v2", "v1");
      assert.equal(await readyOf("v1"), 3);
    } finally {
      watching = false;
      await watcher;
    }
    assert.ok(samples > 10, `sampled the endpoints ${samples} times`);
    assert.ok(min >= 2, `at least 2 ready endpoints at every step (min ${min})`);
  });

  it("garbage collection: deleting an RC in the background deletes its pods; with Orphan they stay and lose the ownerReference; Foreground deletes the pods before the RC", async () => {
    const make = async (name: string) => {
      await c.client.create(rc(name, 2, { app: name }));
      await waitFor(async () => running(await pods(`app=${name}`)).length === 2, { timeoutMs: 30_000, message: `${name} running` });
    };
    await make("gc-bg");
    await c.client.delete("replicationcontrollers", "default", "gc-bg", { propagationPolicy: "Background" });
    await waitFor(async () => (await pods("app=gc-bg")).length === 0, { timeoutMs: 30_000, message: "dependents deleted" });

    await make("gc-orphan");
    await c.client.delete("replicationcontrollers", "default", "gc-orphan", { propagationPolicy: "Orphan" });
    await waitFor(
      async () => (await c.client.list("replicationcontrollers", { namespace: "default", fieldSelector: "metadata.name=gc-orphan" })).items.length === 0,
      { timeoutMs: 30_000, message: "RC removed" },
    );
    const orphans = await pods("app=gc-orphan");
    assert.equal(orphans.length, 2, "the pods stay");
    assert.ok(
      orphans.every((p) => p.metadata?.ownerReferences.length === 0),
      "without the ownerReference",
    );

    await make("gc-fg");
    const owner = unwrap(await c.client.delete("replicationcontrollers", "default", "gc-fg", { propagationPolicy: "Foreground" })) as ReplicationController;
    assert.ok(owner.metadata?.deletionTimestamp && owner.metadata.finalizers.includes("foregroundDeletion"), "the RC waits for its pods");
    await waitFor(
      async () => (await c.client.list("replicationcontrollers", { namespace: "default", fieldSelector: "metadata.name=gc-fg" })).items.length === 0,
      { timeoutMs: 30_000, message: "RC removed after its pods" },
    );
    assert.equal((await pods("app=gc-fg")).length, 0);
  });
});
