import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type * as gen from "@choreo/kit/gen/choreo/rbac/v1/rbac";
import type { Attributes, UserInfo } from "../types.js";
import { RbacAuthorizer } from "./authorizer.js";
import { rulesReview } from "./rules-review.js";
import { clusterRole, clusterRoleBinding, groupSubject, policyRule, role, roleBinding, saSubject, StaticSource, user, userSubject } from "./testing.js";
import type { ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding } from "./types.js";

// The generated messages satisfy the structural interfaces the authorizer reads.
const structural: [
  (r: gen.Role) => Role,
  (r: gen.ClusterRole) => ClusterRole,
  (b: gen.RoleBinding) => RoleBinding,
  (b: gen.ClusterRoleBinding) => ClusterRoleBinding,
  (r: gen.PolicyRule) => PolicyRule,
] = [(r) => r, (r) => r, (b) => b, (b) => b, (r) => r];
void structural;

function req(u: UserInfo, verb: string, resource: string, opts: { ns?: string; group?: string; name?: string; sub?: string } = {}): Attributes {
  return {
    user: u,
    verb,
    resourceRequest: true,
    apiGroup: opts.group ?? "",
    apiVersion: "v1",
    resource,
    subresource: opts.sub ?? "",
    namespace: opts.ns ?? "",
    name: opts.name ?? "",
    path: "",
  };
}
const path = (u: UserInfo, verb: string, p: string): Attributes => ({
  user: u,
  verb,
  resourceRequest: false,
  apiGroup: "",
  apiVersion: "",
  resource: "",
  subresource: "",
  namespace: "",
  name: "",
  path: p,
});

const all = policyRule({ verbs: ["*"], apiGroups: ["*"], resources: ["*"] });
const readPods = policyRule({ verbs: ["get", "list", "watch"], apiGroups: [""], resources: ["pods"] });

function source(): StaticSource {
  return new StaticSource(
    [role("ns1", "pod-reader", readPods), role("ns2", "pod-reader", readPods)],
    [
      clusterRole("cluster-admin", all, policyRule({ verbs: ["*"], nonResourceUrls: ["*"] })),
      clusterRole("admin", all),
      clusterRole("healthz", policyRule({ verbs: ["get"], nonResourceUrls: ["/healthz", "/version", "/api/*"] })),
      clusterRole("node-reader", policyRule({ verbs: ["get", "list"], apiGroups: [""], resources: ["nodes"] })),
    ],
    [
      roleBinding("ns1", "read-pods", "Role", "pod-reader", userSubject("alice")),
      roleBinding("ns2", "admins", "ClusterRole", "admin", groupSubject("ns2-admins")),
      roleBinding("ns1", "builder", "ClusterRole", "admin", saSubject("builder")),
      roleBinding("ns1", "dangling", "Role", "missing", userSubject("carol")),
    ],
    [
      clusterRoleBinding("cluster-admin", "cluster-admin", groupSubject("system:masters")),
      clusterRoleBinding("healthz", "healthz", groupSubject("system:authenticated")),
      clusterRoleBinding("node-readers", "node-reader", userSubject("bob"), groupSubject("node-readers")),
    ],
  );
}

describe("RbacAuthorizer", () => {
  const z = new RbacAuthorizer(source());
  const alice = user("alice", "system:authenticated");
  const bob = user("bob", "system:authenticated", "node-readers");
  const dave = user("dave", "system:authenticated", "ns2-admins");
  const masters = user("root", "system:masters");
  const builder = user("system:serviceaccount:ns1:builder", "system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated");

  it("a RoleBinding's Role applies in its namespace only", () => {
    assert.equal(z.authorize(req(alice, "get", "pods", { ns: "ns1", name: "p" })).allowed, true);
    assert.equal(z.authorize(req(alice, "list", "pods", { ns: "ns1" })).allowed, true);
    assert.equal(z.authorize(req(alice, "delete", "pods", { ns: "ns1", name: "p" })).allowed, false);
    assert.equal(z.authorize(req(alice, "get", "pods", { ns: "ns2", name: "p" })).allowed, false);
    assert.equal(z.authorize(req(alice, "list", "pods")).allowed, false, "across namespaces");
  });

  it("a RoleBinding of a ClusterRole grants its rules in the binding's namespace only", () => {
    assert.equal(z.authorize(req(dave, "delete", "deployments", { ns: "ns2", group: "apps", name: "web" })).allowed, true);
    assert.equal(z.authorize(req(dave, "delete", "deployments", { ns: "ns1", group: "apps", name: "web" })).allowed, false);
    assert.equal(z.authorize(req(dave, "list", "nodes")).allowed, false);
  });

  it("a ServiceAccount subject without namespace is the binding's namespace's", () => {
    const d = z.authorize(req(builder, "create", "pods", { ns: "ns1" }));
    assert.deepEqual(d, { allowed: true, reason: 'RBAC: allowed by RoleBinding "builder/ns1" of ClusterRole "admin" to ServiceAccount "builder/ns1"' });
    assert.equal(z.authorize(req(user("system:serviceaccount:ns2:builder"), "create", "pods", { ns: "ns1" })).allowed, false);
  });

  it("ClusterRoleBindings apply everywhere, by user and by group, with Kubernetes' reason", () => {
    assert.deepEqual(z.authorize(req(bob, "list", "nodes")), {
      allowed: true,
      reason: 'RBAC: allowed by ClusterRoleBinding "node-readers" of ClusterRole "node-reader" to User "bob"',
    });
    const viaGroup = z.authorize(req(user("eve", "node-readers"), "get", "nodes", { name: "n1" }));
    assert.equal(viaGroup.reason, 'RBAC: allowed by ClusterRoleBinding "node-readers" of ClusterRole "node-reader" to Group "node-readers"');
    assert.equal(z.authorize(req(bob, "list", "nodes", { ns: "ns1" })).allowed, true);
    assert.deepEqual(z.authorize(req(bob, "delete", "nodes", { name: "n1" })), { allowed: false, reason: "" });
  });

  it("non-resource paths, with a trailing * as prefix", () => {
    assert.equal(z.authorize(path(alice, "get", "/healthz")).allowed, true);
    assert.equal(z.authorize(path(alice, "get", "/api/v1")).allowed, true);
    assert.equal(z.authorize(path(alice, "post", "/healthz")).allowed, false);
    assert.equal(z.authorize(path(alice, "get", "/metrics")).allowed, false);
    assert.equal(z.authorize(path(user("anon", "system:unauthenticated"), "get", "/healthz")).allowed, false);
  });

  it("system:masters is only as good as its binding", () => {
    assert.equal(z.authorize(req(masters, "delete", "nodes", { name: "n1" })).allowed, true);
    const unbound = new RbacAuthorizer(new StaticSource([], [], [], []));
    assert.equal(unbound.authorize(req(masters, "get", "pods", { ns: "ns1" })).allowed, false);
  });

  it("a binding to a missing role denies, naming the error", () => {
    const d = z.authorize(req(user("carol"), "get", "pods", { ns: "ns1", name: "p" }));
    assert.deepEqual(d, { allowed: false, reason: 'RBAC: role.rbac.authorization.k8s.io "missing" not found' });
  });

  it("sees binding changes once the source's version moves", () => {
    const src = source();
    const zz = new RbacAuthorizer(src);
    const frank = user("frank");
    assert.equal(zz.authorize(req(frank, "get", "pods", { ns: "ns1", name: "p" })).allowed, false);
    src.bindings.push(roleBinding("ns1", "frank", "Role", "pod-reader", userSubject("frank")));
    src.clusterBindings.push(clusterRoleBinding("frank-nodes", "node-reader", userSubject("frank")));
    src.changed();
    assert.equal(zz.authorize(req(frank, "get", "pods", { ns: "ns1", name: "p" })).allowed, true);
    assert.equal(zz.authorize(req(frank, "list", "nodes")).allowed, true);
    src.bindings.pop();
    src.changed();
    assert.equal(zz.authorize(req(frank, "get", "pods", { ns: "ns1", name: "p" })).allowed, false);
    // Role rules are read live: no binding version change needed (the generation moves, for the kept decisions).
    src.clusterRoles.find((r) => r.metadata?.name === "node-reader")?.rules.push(policyRule({ verbs: ["delete"], apiGroups: [""], resources: ["nodes"] }));
    src.rolesChanged();
    assert.equal(zz.authorize(req(frank, "delete", "nodes", { name: "n" })).allowed, true);
  });

  it("rebuilds only the index of the scope whose bindings changed", () => {
    const src = source();
    const reads: string[] = [];
    const rb = src.roleBindings.bind(src);
    const crb = src.clusterRoleBindings.bind(src);
    src.roleBindings = (ns) => (reads.push(ns), rb(ns));
    src.clusterRoleBindings = () => (reads.push("cluster"), crb());
    const zz = new RbacAuthorizer(src);
    const alice = user("alice");
    zz.authorize(req(alice, "get", "pods", { ns: "ns1", name: "p" }));
    zz.authorize(req(alice, "get", "pods", { ns: "ns2", name: "p" }));
    zz.authorize(req(alice, "get", "pods", { ns: "ns1", name: "p" }));
    assert.deepEqual(reads.splice(0), ["cluster", "ns1", "ns2"]);
    src.bindings.push(roleBinding("ns2", "alice", "Role", "pod-reader", userSubject("alice")));
    src.changed("ns2");
    assert.equal(zz.authorize(req(alice, "get", "pods", { ns: "ns2", name: "p" })).allowed, true);
    zz.authorize(req(alice, "get", "pods", { ns: "ns1", name: "p" }));
    assert.deepEqual(reads.splice(0), ["ns2"]);
    src.changed("");
    zz.authorize(req(alice, "get", "pods", { ns: "ns1", name: "p" }));
    assert.deepEqual(reads.splice(0), ["cluster"]);
  });

  it("a binding naming the user twice (user and group) is visited once", () => {
    const src = new StaticSource([], [clusterRole("r", readPods)], [], [clusterRoleBinding("both", "r", groupSubject("g"), userSubject("u"))]);
    const seen: string[] = [];
    const errors: string[] = [];
    new RbacAuthorizer(src).visitRulesFor(user("u", "g"), "", (r, ref) => (seen.push(`${ref.binding.metadata?.name}:${ref.subject}`), true), errors);
    assert.deepEqual(seen, ["both:0"]);
    assert.equal(
      new RbacAuthorizer(src).authorize(req(user("u", "g"), "get", "pods", { ns: "x" })).reason,
      'RBAC: allowed by ClusterRoleBinding "both" of ClusterRole "r" to Group "g"',
    );
  });

  it("1,000 bindings: only the user's are looked at, and every one counts", () => {
    const roles: Role[] = [];
    const bindings: RoleBinding[] = [];
    const clusterBindings: ClusterRoleBinding[] = [];
    for (let i = 0; i < 1000; i++) {
      const ns = `ns${Math.floor(i / 20)}`;
      roles.push(role(ns, `r${i}`, policyRule({ verbs: ["get"], apiGroups: [""], resources: ["configmaps"], resourceNames: [`cm${i}`] })));
      bindings.push(roleBinding(ns, `b${i}`, "Role", `r${i}`, userSubject(`user${i}`), groupSubject(`team${i % 10}`)));
      if (i % 2 === 0) clusterBindings.push(clusterRoleBinding(`c${i}`, "node-reader", userSubject(`user${i}`)));
    }
    const src = new StaticSource(
      roles,
      [clusterRole("node-reader", policyRule({ verbs: ["list"], apiGroups: [""], resources: ["nodes"] }))],
      bindings,
      clusterBindings,
    );
    let lookups = 0;
    const getRole = src.getRole.bind(src);
    src.getRole = (ns, name) => (lookups++, getRole(ns, name));
    const zz = new RbacAuthorizer(src);
    for (let i = 0; i < 1000; i++) {
      const u = user(`user${i}`);
      const ns = `ns${Math.floor(i / 20)}`;
      assert.equal(zz.authorize(req(u, "get", "configmaps", { ns, name: `cm${i}` })).allowed, true, `user${i}`);
      assert.equal(zz.authorize(req(u, "get", "configmaps", { ns, name: `cm${(i + 50) % 1000}` })).allowed, false);
      assert.equal(zz.authorize(req(u, "list", "nodes")).allowed, i % 2 === 0);
    }
    // ns0 holds bindings 0-19; two of them (0 and 10) name group team0: a
    // decision looks up their roles only (1 + 2 + 2), not ns0's twenty.
    lookups = 0;
    assert.equal(zz.authorize(req(user("x", "team0"), "get", "configmaps", { ns: "ns0", name: "cm0" })).allowed, true);
    assert.equal(zz.authorize(req(user("x", "team0"), "get", "configmaps", { ns: "ns0", name: "cm10" })).allowed, true);
    assert.equal(zz.authorize(req(user("x", "team0"), "get", "configmaps", { ns: "ns0", name: "cm1" })).allowed, false);
    assert.equal(lookups, 5, "role lookups for 3 decisions");
  });

  it("keeps decisions until the generation moves: a revoke or a grant is seen by the next decision", () => {
    const src = source();
    let lookups = 0;
    const getRole = src.getRole.bind(src);
    src.getRole = (ns, name) => (lookups++, getRole(ns, name));
    const zz = new RbacAuthorizer(src);
    const alice = user("alice", "system:authenticated");
    const first = zz.authorize(req(alice, "get", "pods", { ns: "ns1", name: "p1" }));
    assert.equal(first.allowed, true);
    const looked = lookups;
    // Kept: the same decision for another pod's name (no rule read names objects), the roles not read again.
    assert.equal(zz.authorize(req(alice, "get", "pods", { ns: "ns1", name: "p2" })), first);
    assert.equal(lookups, looked);
    // A binding revoked: the next decision denies.
    const bindings = src.bindings.splice(0, src.bindings.length);
    src.changed("ns1");
    assert.equal(zz.authorize(req(alice, "get", "pods", { ns: "ns1", name: "p1" })).allowed, false);
    // Granted again.
    src.bindings.push(...bindings);
    src.changed("ns1");
    assert.equal(zz.authorize(req(alice, "get", "pods", { ns: "ns1", name: "p1" })).allowed, true);
    // A role's rule revoked in place (no binding changed): the next decision denies.
    const podReader = src.roles.find((r) => r.metadata?.namespace === "ns1" && r.metadata.name === "pod-reader");
    assert.ok(podReader);
    const rules = podReader.rules.splice(0, podReader.rules.length);
    src.rolesChanged();
    assert.equal(zz.authorize(req(alice, "get", "pods", { ns: "ns1", name: "p1" })).allowed, false);
    podReader.rules.push(...rules);
    src.rolesChanged();
    assert.equal(zz.authorize(req(alice, "get", "pods", { ns: "ns1", name: "p1" })).allowed, true);
  });

  it("a decision a rule with resourceNames made is kept for that name only", () => {
    const src = new StaticSource(
      [role("ns", "one-map", policyRule({ verbs: ["get"], apiGroups: [""], resources: ["configmaps"], resourceNames: ["a"] }))],
      [],
      [roleBinding("ns", "b", "Role", "one-map", userSubject("u"))],
      [],
    );
    const zz = new RbacAuthorizer(src);
    const u = user("u");
    for (let round = 0; round < 2; round++) {
      assert.equal(zz.authorize(req(u, "get", "configmaps", { ns: "ns", name: "a" })).allowed, true, `a, round ${round}`);
      assert.equal(zz.authorize(req(u, "get", "configmaps", { ns: "ns", name: "b" })).allowed, false, `b, round ${round}`);
      assert.equal(zz.authorize(req(u, "get", "configmaps", { ns: "ns" })).allowed, false, `no name, round ${round}`);
    }
  });

  it("users, groups and requests that would spell the same text are kept apart", () => {
    const src = new StaticSource([], [clusterRole("r", readPods)], [], [clusterRoleBinding("g", "r", groupSubject("b"))]);
    const zz = new RbacAuthorizer(src);
    assert.equal(zz.authorize(req(user("a", "b"), "get", "pods", { ns: "x" })).allowed, true);
    assert.equal(zz.authorize(req(user("ab"), "get", "pods", { ns: "x" })).allowed, false);
    assert.equal(zz.authorize(req(user("a", "b"), "get", "pods", { ns: "x", group: "" })).allowed, true);
    assert.equal(zz.authorize(req(user("a", "b"), "get", "pods", { ns: "x", sub: "log" })).allowed, false);
    assert.equal(zz.authorize(req(user("a", "b"), "get", "pods", { ns: "y" })).allowed, true);
    assert.equal(zz.authorize(req(user("a", "b"), "list", "pods", { ns: "x" })).allowed, true);
    assert.equal(zz.authorize(req(user("a", "b"), "delete", "pods", { ns: "x" })).allowed, false);
    assert.equal(zz.authorize(path(user("a", "b"), "get", "/healthz")).allowed, false);
  });

  it("a source without a generation is asked for every decision", () => {
    const src = source();
    const plain = {
      getRole: src.getRole.bind(src),
      getClusterRole: src.getClusterRole.bind(src),
      roleBindings: src.roleBindings.bind(src),
      clusterRoleBindings: src.clusterRoleBindings.bind(src),
      version: src.version.bind(src),
    };
    const zz = new RbacAuthorizer(plain);
    const alice = user("alice");
    assert.equal(zz.authorize(req(alice, "get", "pods", { ns: "ns1", name: "p" })).allowed, true);
    const podReader = src.roles.find((r) => r.metadata?.namespace === "ns1" && r.metadata.name === "pod-reader");
    podReader?.rules.splice(0);
    assert.equal(zz.authorize(req(alice, "get", "pods", { ns: "ns1", name: "p" })).allowed, false);
  });
});

describe("rulesReview", () => {
  const z = new RbacAuthorizer(source());

  it("lists the cluster-wide and the namespace's rules, resource and non-resource apart", () => {
    const r = rulesReview(z, user("alice", "system:authenticated"), "ns1");
    assert.deepEqual(r, {
      resourceRules: [{ verbs: ["get", "list", "watch"], apiGroups: [""], resources: ["pods"], resourceNames: [] }],
      nonResourceRules: [{ verbs: ["get"], nonResourceUrls: ["/healthz", "/version", "/api/*"] }],
      incomplete: false,
      evaluationError: "",
    });
    assert.deepEqual(rulesReview(z, user("alice", "system:authenticated"), "ns2").resourceRules, []);
  });

  it("a role it cannot find is an evaluationError, the other rules still listed", () => {
    const r = rulesReview(z, user("carol", "node-readers"), "ns1");
    assert.equal(r.incomplete, false);
    assert.equal(r.evaluationError, 'role.rbac.authorization.k8s.io "missing" not found');
    assert.deepEqual(r.resourceRules, [{ verbs: ["get", "list"], apiGroups: [""], resources: ["nodes"], resourceNames: [] }]);
  });

  it("several errors are listed as Kubernetes' aggregate", () => {
    const src = new StaticSource([], [], [roleBinding("a", "x", "Role", "gone", userSubject("u"))], [clusterRoleBinding("y", "absent", userSubject("u"))]);
    const r = rulesReview(new RbacAuthorizer(src), user("u"), "a");
    assert.equal(r.evaluationError, '[clusterrole.rbac.authorization.k8s.io "absent" not found, role.rbac.authorization.k8s.io "gone" not found]');
  });
});
