// The node authorizer: a node writes only its own Node, status and Lease,
// reads only its pods and what they use, writes only its pods' status, and
// deletes and evicts only its pods; everything else is RBAC's to decide.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Attributes, Decision, UserInfo } from "../types.js";
import { NodeGraph } from "./graph.js";
import { NodeAuthorizer, nodeOfUser } from "./node-authorizer.js";

const node1: UserInfo = { name: "system:node:node-1", uid: "system:node:node-1", groups: ["system:nodes", "system:authenticated"], extra: {} };
const attrs = (over: Partial<Attributes>): Attributes => ({
  user: node1,
  verb: "patch",
  resourceRequest: true,
  apiGroup: "",
  apiVersion: "v1",
  resource: "nodes",
  subresource: "",
  namespace: "",
  name: "node-1",
  path: "",
  ...over,
});
const pods = (over: Partial<Attributes>): Attributes => attrs({ resource: "pods", namespace: "default", ...over });

const kind = (d: Decision): "allow" | "deny" | "no opinion" => (d.allowed ? "allow" : d.denied ? "deny" : "no opinion");

function pod(name: string, node: string, spec: Record<string, unknown> = {}): Pod {
  return unwrap(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: "default" },
      spec: { nodeName: node, containers: [{ name: "c", image: "x" }], ...spec },
    }),
  ) as Pod;
}

describe("NodeAuthorizer", () => {
  const graph = new NodeGraph();
  graph.put(
    pod("mine", "node-1", { serviceAccountName: "robot", volumes: [{ name: "v", configMap: { name: "my-cm" } }], imagePullSecrets: [{ name: "my-pull" }] }),
  );
  graph.put(pod("theirs", "node-2", { serviceAccountName: "other-robot", volumes: [{ name: "v", secret: { secretName: "their-secret" } }] }));
  graph.put(pod("pending", "", { volumes: [{ name: "v", secret: { secretName: "pending-secret" } }] }));
  const z = new NodeAuthorizer(graph);

  it("a node's user is system:node:<name> in system:nodes", () => {
    assert.equal(nodeOfUser({ user: node1 }), "node-1");
    assert.equal(nodeOfUser({ user: { ...node1, groups: ["system:authenticated"] } }), undefined);
    assert.equal(nodeOfUser({ user: { ...node1, name: "system:hollow-nodes:hollow" } }), undefined);
  });

  it("another node's Node, status or Lease: denied, ending the chain", () => {
    for (const a of [
      attrs({ name: "node-2" }),
      attrs({ name: "node-2", subresource: "status" }),
      attrs({ name: "node-2", verb: "update", subresource: "status" }),
      attrs({ name: "node-2", verb: "delete" }),
      attrs({ apiGroup: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease", name: "node-2", verb: "update" }),
    ]) {
      const d = z.authorize(a);
      assert.equal(kind(d), "deny", JSON.stringify(a));
      assert.match(d.reason, /node "node-1" may not modify/);
    }
  });

  it("reads of what its pods use: allowed one by one; another node's pod's, a pending pod's, or a list: not", () => {
    const cases: [Partial<Attributes>, ReturnType<typeof kind>][] = [
      [{ resource: "configmaps", verb: "get", name: "my-cm" }, "allow"],
      [{ resource: "secrets", verb: "get", name: "my-pull" }, "allow"],
      [{ resource: "serviceaccounts", verb: "get", name: "robot" }, "allow"],
      [{ resource: "serviceaccounts", verb: "create", subresource: "token", name: "robot" }, "allow"],
      [{ resource: "secrets", verb: "get", name: "their-secret" }, "no opinion"],
      [{ resource: "secrets", verb: "get", name: "pending-secret" }, "no opinion"],
      [{ resource: "serviceaccounts", verb: "create", subresource: "token", name: "other-robot" }, "no opinion"],
      [{ resource: "secrets", verb: "get", name: "my-pull", namespace: "prod" }, "no opinion"],
      [{ resource: "configmaps", verb: "update", name: "my-cm" }, "no opinion"],
      [{ resource: "secrets", verb: "list", name: "" }, "deny"],
      [{ resource: "configmaps", verb: "watch", name: "", namespace: "" }, "deny"],
    ];
    for (const [over, want] of cases) {
      const d = z.authorize(attrs({ namespace: "default", ...over }));
      assert.equal(kind(d), want, JSON.stringify(over));
      if (want === "no opinion" && over.verb === "get") assert.equal(d.reason, "no relationship found between node 'node-1' and this object");
    }
  });

  it("its pods: get, status, delete and eviction allowed; another node's or an unknown pod's denied; a list only with its spec.nodeName selector", () => {
    const cases: [Partial<Attributes>, ReturnType<typeof kind>, RegExp?][] = [
      [{ verb: "get", name: "mine" }, "allow"],
      [{ verb: "update", subresource: "status", name: "mine" }, "allow"],
      [{ verb: "patch", subresource: "status", name: "mine" }, "allow"],
      [{ verb: "delete", name: "mine" }, "allow"],
      [{ verb: "create", subresource: "eviction", name: "mine" }, "allow"],
      [{ verb: "list", name: "", fieldSelector: "spec.nodeName=node-1" }, "allow"],
      [{ verb: "watch", name: "", namespace: "", fieldSelector: "status.phase!=Failed,spec.nodeName==node-1" }, "allow"],
      [{ verb: "get", name: "theirs" }, "deny", /can only read pods with spec.nodeName set to itself/],
      [{ verb: "get", name: "nope" }, "deny"],
      [{ verb: "patch", subresource: "status", name: "theirs" }, "deny", /can only update pod status for pods with spec.nodeName set to itself/],
      [{ verb: "update", subresource: "status", name: "pending" }, "deny"],
      [{ verb: "delete", name: "theirs" }, "deny", /can only delete pods with spec.nodeName set to itself/],
      [{ verb: "create", subresource: "eviction", name: "theirs" }, "deny"],
      [{ verb: "list", name: "" }, "deny", /can only list\/watch pods with spec.nodeName field selector/],
      [{ verb: "list", name: "", fieldSelector: "spec.nodeName=node-2" }, "deny"],
      [{ verb: "list", name: "", fieldSelector: "spec.nodeName!=node-1" }, "deny"],
      [{ verb: "list", name: "", fieldSelector: "spec.nodeName=node-1,=" }, "deny"],
      [{ verb: "create", name: "" }, "deny", /can only create mirror pods/],
      [{ verb: "update", name: "mine" }, "deny"],
      [{ verb: "deletecollection", name: "" }, "deny"],
      [{ verb: "get", subresource: "log", name: "mine" }, "no opinion"],
    ];
    for (const [over, want, reason] of cases) {
      const d = z.authorize(pods(over));
      assert.equal(kind(d), want, JSON.stringify(over));
      if (reason) assert.match(d.reason, reason);
    }
  });

  it("its own Node and Lease, other kinds, other users and non-resource paths: no opinion (RBAC decides)", () => {
    for (const a of [
      attrs({}),
      attrs({ subresource: "status" }),
      attrs({ name: "node-2", verb: "get" }),
      attrs({ verb: "list", name: "" }),
      attrs({ apiGroup: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease", name: "node-1", verb: "update" }),
      attrs({ apiGroup: "coordination.k8s.io", resource: "leases", namespace: "default", name: "node-2", verb: "update" }),
      attrs({ resource: "events", namespace: "default", name: "", verb: "create" }),
      attrs({ resource: "services", namespace: "", name: "", verb: "list" }),
      attrs({ apiGroup: "apps", resource: "deployments", namespace: "default", name: "", verb: "create" }),
      pods({ verb: "get", name: "theirs", user: { ...node1, name: "alice", groups: ["system:authenticated"] } }),
      pods({ verb: "get", name: "theirs", user: { ...node1, name: "system:hollow-nodes:h", groups: ["system:nodes", "system:hollow-nodes"] } }),
      attrs({ resourceRequest: false, resource: "", name: "", path: "/metrics", verb: "get" }),
    ]) {
      assert.equal(kind(z.authorize(a)), "no opinion", JSON.stringify(a));
    }
  });

  it("without a graph, reads and pod writes get no opinion (RBAC decides); other nodes' writes are still denied", () => {
    const bare = new NodeAuthorizer();
    assert.equal(kind(bare.authorize(pods({ verb: "get", name: "theirs" }))), "no opinion");
    assert.equal(kind(bare.authorize(attrs({ resource: "secrets", namespace: "default", verb: "get", name: "their-secret" }))), "no opinion");
    assert.equal(kind(bare.authorize(attrs({ name: "node-2" }))), "deny");
  });
});
