// The node authorizer's attribute checks: a node writes only its own Node,
// status and Lease; everything else is RBAC's to decide.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Attributes, UserInfo } from "../types.js";
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

describe("NodeAuthorizer", () => {
  const z = new NodeAuthorizer();

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
      assert.deepEqual([d.allowed, d.denied], [false, true], JSON.stringify(a));
      assert.match(d.reason, /node "node-1" may not modify/);
    }
  });

  it("its own, reads, other kinds and other users: no opinion (RBAC decides)", () => {
    for (const a of [
      attrs({}),
      attrs({ subresource: "status" }),
      attrs({ name: "node-2", verb: "get" }),
      attrs({ verb: "list", name: "" }),
      attrs({ apiGroup: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease", name: "node-1", verb: "update" }),
      attrs({ apiGroup: "coordination.k8s.io", resource: "leases", namespace: "default", name: "node-2", verb: "update" }),
      attrs({ resource: "pods", namespace: "default", name: "x", verb: "delete" }),
      attrs({ name: "node-2", user: { ...node1, name: "alice", groups: ["system:authenticated"] } }),
    ]) {
      const d = z.authorize(a);
      assert.equal(d.allowed, false, JSON.stringify(a));
      assert.notEqual(d.denied, true, JSON.stringify(a));
    }
  });
});
