// test-tier: servers
// The node authorizer and NodeRestriction on a real cluster with two real
// nodes (process runtime), with the node agents' own credentials (the token
// files the harness provisioned for them): a Deployment whose pods take a
// Secret as env and a ConfigMap as a volume runs on both nodes, and node 0's
// identity reads its own pods and the Secret they use, but gets 403 for a
// pod of node 1, a Secret only node 1's pod uses, a list of Secrets, a list
// of pods across nodes, node 1's pod's status, deleting it, and a
// node-restriction label on its own Node — each refused object unchanged.
// After a kill -9 of the api, the rebuilt graph lets the node read again.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { ApiError, unwrap } from "@choreo/kit";
import { ApiClient } from "@choreo/kit/client";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { readTokenFile } from "@choreo/kit/secrets";
import { waitFor } from "@choreo/kit/testing";
import { withLogsOnFailure } from "./support/cluster.js";
import { run } from "./support/kubectl.js";
import { startRealCluster, type RealCluster } from "./support/real-cluster.js";

const WAIT = { timeoutMs: 120_000 };
const IMAGE = "local/busybox:1.35";
const MERGE = "application/merge-patch+json";

/** The status code `p` rejects with (an ApiError), or 200; the message of a refusal. */
async function outcome(p: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await p;
    return { code: 200, message: "" };
  } catch (err) {
    if (err instanceof ApiError) return { code: err.code, message: err.message };
    throw err;
  }
}

const container = (extra: Record<string, unknown> = {}) => ({
  name: "app",
  image: IMAGE,
  command: ["sh", "-c", 'test "$PASSWORD" = hunter2 && test "$(cat /etc/app/greeting)" = hello && exec sleep 3600'],
  volumeMounts: [{ name: "cfg", mountPath: "/etc/app" }],
  ...extra,
});

describe("node authorizer: a node reads only its pods and what they use, writes only its own", () => {
  let c: RealCluster;
  /** Node 0's agent's identity: the token file the harness wrote for it. */
  let node0: ApiClient;
  let nodes: string[];
  let podOnNode1 = "";

  const runningPods = async (label: string): Promise<Pod[]> =>
    (await c.client.list("pods", { namespace: "default", labelSelector: label })).items
      .map((o) => unwrap(o) as Pod)
      .filter((p) => p.status?.phase === "Running");

  before(async () => {
    c = await startRealCluster("process", { nodes: 2 });
    nodes = c.nodes;
    node0 = new ApiClient(c.nc, { timeoutMs: 15_000, token: readTokenFile(path.join(c.dir, "identities", `${nodes[0]}.token`)) });
  });
  after(async () => {
    if (c) await c.stop();
  });

  it("the agents run every pod of a Deployment using a Secret (env) and a ConfigMap (volume) on both nodes, and a pod on node 1 with its own Secret", () =>
    withLogsOnFailure(c, async () => {
      await c.client.create(
        fromKubeJson({ apiVersion: "v1", kind: "Secret", metadata: { name: "db", namespace: "default" }, stringData: { password: "hunter2" } }),
      );
      await c.client.create(
        fromKubeJson({ apiVersion: "v1", kind: "Secret", metadata: { name: "node1-only", namespace: "default" }, stringData: { PASSWORD: "hunter2" } }),
      );
      await c.client.create(
        fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "app-config", namespace: "default" }, data: { greeting: "hello" } }),
      );
      await c.client.create(
        fromKubeJson({
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "web", namespace: "default" },
          spec: {
            replicas: 4,
            selector: { matchLabels: { app: "web" } },
            template: {
              metadata: { labels: { app: "web" } },
              spec: {
                terminationGracePeriodSeconds: 1,
                containers: [container({ env: [{ name: "PASSWORD", valueFrom: { secretKeyRef: { name: "db", key: "password" } } }] })],
                volumes: [{ name: "cfg", configMap: { name: "app-config" } }],
              },
            },
          },
        }),
      );
      await c.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "only-on-1", namespace: "default", labels: { app: "only-on-1" } },
          spec: {
            nodeName: nodes[1],
            terminationGracePeriodSeconds: 1,
            containers: [container({ envFrom: [{ secretRef: { name: "node1-only" } }] })],
            volumes: [{ name: "cfg", configMap: { name: "app-config" } }],
          },
        }),
      );
      const web = await waitFor(
        async () => {
          const running = await runningPods("app=web");
          return running.length === 4 ? running : undefined;
        },
        { ...WAIT, message: "4 web pods Running" },
      );
      assert.deepEqual([...new Set(web.map((p) => p.spec?.nodeName))].sort(), [...nodes].sort(), "the Deployment's pods are spread over both nodes");
      const only = await waitFor(
        async () => {
          const running = await runningPods("app=only-on-1");
          return running.length === 1 ? running : undefined;
        },
        { ...WAIT, message: "only-on-1 Running" },
      );
      // Each container checks its Secret's value and its ConfigMap's file before it sleeps: none exited.
      for (const p of [...web, ...only]) assert.equal(p.status?.containerStatuses[0]?.restartCount, 0, `${p.metadata?.name} kept running`);
      podOnNode1 = "only-on-1";
    }));

  it("node 0 reads its own pods, the Secret and ConfigMap they use, and lists its pods by spec.nodeName", () =>
    withLogsOnFailure(c, async () => {
      const mine = (await runningPods("app=web")).find((p) => p.spec?.nodeName === nodes[0]);
      assert.ok(mine?.metadata);
      assert.equal((await outcome(node0.get("pods", "default", mine.metadata.name))).code, 200);
      assert.equal((await outcome(node0.get("secrets", "default", "db"))).code, 200);
      assert.equal((await outcome(node0.get("configmaps", "default", "app-config"))).code, 200);
      const listed = await node0.list("pods", { fieldSelector: `spec.nodeName=${nodes[0]}` });
      assert.ok(listed.items.length >= 1);
      assert.ok(listed.items.every((o) => (unwrap(o) as Pod).spec?.nodeName === nodes[0]));
    }));

  it("node 0 is refused node 1's pod, a Secret only node 1's pod uses, a list of Secrets or of every pod: 403 naming why", () =>
    withLogsOnFailure(c, async () => {
      const user = `system:node:${nodes[0]}`;
      const pod = await outcome(node0.get("pods", "default", podOnNode1));
      assert.equal(pod.code, 403);
      assert.match(
        pod.message,
        new RegExp(`pods "only-on-1" is forbidden: User "${user}" cannot get resource "pods" .*can only read pods with spec.nodeName set to itself`),
      );
      const secret = await outcome(node0.get("secrets", "default", "node1-only"));
      assert.equal(secret.code, 403);
      assert.match(
        secret.message,
        new RegExp(
          `secrets "node1-only" is forbidden: User "${user}" cannot get resource "secrets" .*no relationship found between node '${nodes[0]}' and this object`,
        ),
      );
      const list = await outcome(node0.list("secrets", { namespace: "default" }));
      assert.equal(list.code, 403);
      assert.match(list.message, /never list them/);
      assert.equal((await outcome(node0.list("configmaps"))).code, 403);
      const allPods = await outcome(node0.list("pods"));
      assert.equal(allPods.code, 403);
      assert.match(allPods.message, /can only list\/watch pods with spec.nodeName field selector/);
      assert.equal((await outcome(node0.list("pods", { fieldSelector: `spec.nodeName=${nodes[1]}` }))).code, 403);
    }));

  it("node 0 may not patch node 1's pod's status, delete it, create a pod or label its own Node node-restriction.kubernetes.io/: 403, nothing changed", () =>
    withLogsOnFailure(c, async () => {
      // Once Ready, its agent normally has nothing more to write.
      const before = await waitFor(
        async () => {
          const p = await c.pod(podOnNode1);
          return p.status?.conditions.some((k) => k.type === "Ready" && k.status === "True") && p.status.containerStatuses[0]?.started ? p : undefined;
        },
        { ...WAIT, message: "only-on-1 Ready" },
      );
      const status = await outcome(node0.patch("pods", "default", podOnNode1, MERGE, { status: { phase: "Failed", message: "forged" } }, "status"));
      assert.equal(status.code, 403);
      assert.match(status.message, /can only update pod status for pods with spec.nodeName set to itself/);
      const update = await outcome(node0.typed("pod").updateStatus({ ...before, status: { ...before.status!, message: "forged" } }));
      assert.equal(update.code, 403);
      const del = await outcome(node0.delete("pods", "default", podOnNode1));
      assert.equal(del.code, 403);
      assert.match(del.message, /can only delete pods with spec.nodeName set to itself/);
      const created = await outcome(
        node0.create(
          fromKubeJson({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "by-node", namespace: "default" },
            spec: { nodeName: nodes[0], containers: [{ name: "c", image: IMAGE }] },
          }),
        ),
      );
      assert.equal(created.code, 403);
      assert.match(created.message, /can only create mirror pods/);
      const after = await c.pod(podOnNode1);
      assert.equal(after.status?.message, before.status?.message);
      assert.equal(after.status?.phase, "Running");
      // Not its resourceVersion: on a loaded machine node 1's own agent may legitimately write again (a late lease marks
      // the pod not Ready, the agent sets it back); what node 0 tried — Failed, "forged", deleted — is what must not be there.
      assert.notEqual(after.status?.message, "forged", "node 1's pod's status is not node 0's");
      assert.ok(!after.metadata?.deletionTimestamp);
      assert.equal((await outcome(c.client.get("pods", "default", "by-node"))).code, 404);

      const ownBefore = unwrap(await c.client.get("nodes", "", nodes[0]!)) as Node;
      const label = await outcome(node0.patch("nodes", "", nodes[0]!, MERGE, { metadata: { labels: { "node-restriction.kubernetes.io/pci": "yes" } } }));
      assert.equal(label.code, 403);
      assert.match(label.message, /is not allowed to modify labels: node-restriction.kubernetes.io\/pci/);
      const taint = await outcome(node0.patch("nodes", "", nodes[0]!, MERGE, { spec: { taints: [{ key: "mine", effect: "NoSchedule" }] } }));
      assert.equal(taint.code, 403);
      assert.match(taint.message, /is not allowed to modify taints/);
      // Its agent's heartbeat may rewrite the Node's status meanwhile: labels and taints are what must not have moved.
      const ownAfter = unwrap(await c.client.get("nodes", "", nodes[0]!)) as Node;
      assert.deepEqual(ownAfter.metadata?.labels, ownBefore.metadata?.labels, "its Node's labels unchanged");
      assert.deepEqual(ownAfter.spec?.taints, ownBefore.spec?.taints, "its Node's taints unchanged");
      // Its own Node's other labels it still writes (the agent's registration does).
      assert.equal((await outcome(node0.patch("nodes", "", nodes[0]!, MERGE, { metadata: { labels: { "example.com/rack": "r1" } } }))).code, 200);
    }));

  it("kubectl 1.32 with node 0's token: its Secret yes, node 1's Secret and every pod Forbidden, its pods by field selector", () =>
    withLogsOnFailure(c, async () => {
      const token = readTokenFile(path.join(c.dir, "identities", `${nodes[0]}.token`));
      const k = (...args: string[]) => run("kubectl", ["--token", token, ...args], c.kubeconfig);
      const own = await k("get", "secret", "db", "-o", "name");
      assert.equal(own.code, 0, own.stderr);
      assert.equal(own.stdout.trim(), "secret/db");
      const other = await k("get", "secret", "node1-only");
      assert.notEqual(other.code, 0);
      assert.match(other.stderr, /Error from server \(Forbidden\): secrets "node1-only" is forbidden: User "system:node:[^"]+" cannot get resource "secrets"/);
      const all = await k("get", "pods", "-A");
      assert.notEqual(all.code, 0);
      assert.match(all.stderr, /Forbidden/);
      const mine = await k("get", "pods", "--field-selector", `spec.nodeName=${nodes[0]}`, "-o", "name");
      assert.equal(mine.code, 0, mine.stderr);
      assert.match(mine.stdout, /pod\/web-/);
    }));

  it("after a kill -9 of the api the graph is rebuilt: node 0 reads its Secret again, still not node 1's, and the agents run a scaled-up Deployment", () =>
    withLogsOnFailure(c, async () => {
      await c.killApi(0);
      await c.startApi(0);
      await waitFor(async () => (await outcome(node0.get("secrets", "default", "db"))).code === 200, { timeoutMs: 60_000, message: "node 0 reads db again" });
      assert.equal((await outcome(node0.get("secrets", "default", "node1-only"))).code, 403);
      assert.equal((await outcome(node0.get("pods", "default", podOnNode1))).code, 403);
      await c.client.patch("deployments", "default", "web", MERGE, { spec: { replicas: 6 } });
      await waitFor(async () => (await runningPods("app=web")).length === 6, { ...WAIT, message: "6 web pods Running after the api's restart" });
    }));
});
