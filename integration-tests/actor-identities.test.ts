// test-tier: servers
// Each actor its own identity, on a real api: over NATS a request without a
// token is 401 (the bus credentials alone prove nothing); a node agent's
// token and NATS user may do what the system:node role grants and nothing
// more — a Deployment, a ClusterRoleBinding, deleting a namespace are the
// apiserver's 403 with nothing stored; the scheduler's identity the same.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { ApiError, unwrap } from "@choreo/kit";
import { connectBus } from "@choreo/kit/bus";
import { ApiClient } from "@choreo/kit/client";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { ACTOR_IDENTITIES, identityNatsPermissions, natsUserName, nodeIdentity, provisionIdentity } from "@choreo/kit/secrets";
import { startCluster, type TestCluster } from "./support/cluster.js";

/** The status code `p` rejects with (an ApiError), or 200. */
async function codeOf(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof ApiError) return err.code;
    throw err;
  }
}

const deployment = (name: string) =>
  fromKubeJson({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: "default" },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: "c", image: "nginx" }] } },
    },
  });

describe("actor identities over NATS", () => {
  let c: TestCluster;
  const conns: NatsConnection[] = [];
  /** A connection as `name`'s NATS user and an ApiClient with its token (or none). */
  const asActor = async (name: string, id: Parameters<typeof identityNatsPermissions>[0], withToken = true): Promise<ApiClient> => {
    const token = provisionIdentity(path.join(c.dir, "api", "tokens"), path.join(c.dir, "identities", `${name}.token`), id);
    const nc = await connectBus(c.nats.address, name, await c.nats.addUser(natsUserName(name), identityNatsPermissions(id)));
    conns.push(nc);
    return new ApiClient(nc, { timeoutMs: 15_000, token: withToken ? token : undefined });
  };

  before(async () => {
    c = await startCluster();
  });
  after(async () => {
    await Promise.all(conns.map((nc) => nc.close().catch(() => undefined)));
    await c?.stop();
  });

  it("without a token: 401 Unauthorized, also on the admin's bus connection", async () => {
    const anonymous = new ApiClient(c.nc, { timeoutMs: 15_000 });
    assert.equal(await codeOf(anonymous.get("namespaces", "", "default")), 401);
    assert.equal(await codeOf(anonymous.create(deployment("anonymous"))), 401);
    const node = await asActor("node-x", nodeIdentity("node-x"), false);
    assert.equal(await codeOf(node.list("pods")), 401);
    assert.equal(await codeOf(c.client.get("deployments", "default", "anonymous")), 404);
  });

  it("a wrong token: 401", async () => {
    const wrong = new ApiClient(c.nc, { timeoutMs: 15_000, token: "not-a-token" });
    assert.equal(await codeOf(wrong.list("namespaces")), 401);
  });

  it("node-1's identity reads what its role grants and gets 403 on what it does not, nothing stored", async () => {
    const node = await asActor("node-1", nodeIdentity("node-1"));
    assert.equal(await codeOf(node.list("nodes")), 200);
    assert.equal(await codeOf(node.list("services")), 200);
    const refused = await node.create(deployment("by-node")).then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.ok(refused instanceof ApiError, String(refused));
    assert.equal(refused.code, 403);
    assert.equal(refused.reason, "Forbidden");
    assert.match(refused.message, /User "system:node:node-1" cannot create resource "deployments" in API group "apps" in the namespace "default"/);
    const crb = fromKubeJson({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "node-1-admin" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
      subjects: [{ kind: "User", name: "system:node:node-1", apiGroup: "rbac.authorization.k8s.io" }],
    });
    assert.equal(await codeOf(node.create(crb)), 403);
    assert.equal(await codeOf(node.delete("namespaces", "", "default")), 403);
    assert.equal(await codeOf(c.client.get("deployments", "default", "by-node")), 404);
    assert.equal(await codeOf(c.client.get("clusterrolebindings", "", "node-1-admin")), 404);
    const ns = unwrap(await c.client.get("namespaces", "", "default"));
    assert.ok(!ns.metadata?.deletionTimestamp, "default is not being deleted");
  });

  it("node-1 patches its own Node's status and gets 403 for node-2's (the node authorizer), node-2 unchanged", async () => {
    for (const name of ["node-1", "node-2"])
      await c.client.create(fromKubeJson({ apiVersion: "v1", kind: "Node", metadata: { name, labels: { who: "admin" } } }));
    const node = await asActor("node-1-writer", nodeIdentity("node-1"));
    const patch = { metadata: { labels: { who: "node-1" } } };
    assert.equal(await codeOf(node.patch("nodes", "", "node-1", "application/merge-patch+json", patch)), 200);
    assert.equal(await codeOf(node.patch("nodes", "", "node-1", "application/merge-patch+json", patch, "status")), 200);
    const refused = await node.patch("nodes", "", "node-2", "application/merge-patch+json", patch, "status").then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.ok(refused instanceof ApiError, String(refused));
    assert.equal(refused.code, 403);
    assert.match(
      refused.message,
      /nodes "node-2" is forbidden: User "system:node:node-1" cannot patch resource "nodes\/status" .*node "node-1" may not modify node "node-2"/,
    );
    assert.equal(await codeOf(node.patch("nodes", "", "node-2", "application/merge-patch+json", patch)), 403);
    assert.equal(await codeOf(node.delete("nodes", "", "node-2")), 403);
    const node2 = unwrap(await c.client.get("nodes", "", "node-2"));
    assert.equal(node2.metadata?.labels["who"], "admin");
  });

  it("the scheduler's identity binds and reads but may not create workloads", async () => {
    const scheduler = await asActor("scheduler", ACTOR_IDENTITIES.scheduler);
    assert.equal(await codeOf(scheduler.list("pods")), 200);
    assert.equal(await codeOf(scheduler.create(deployment("by-scheduler"))), 403);
    assert.equal(await codeOf(c.client.get("deployments", "default", "by-scheduler")), 404);
  });
});
