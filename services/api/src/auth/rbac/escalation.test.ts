import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApiError } from "@choreo/kit";
import { RbacAuthorizer } from "./authorizer.js";
import { checkEscalation, compactRules, compactString, covers, type EscalationRequest } from "./escalation.js";
import { clusterRole, clusterRoleBinding, policyRule as rule, role, roleBinding, StaticSource, user, userSubject } from "./testing.js";
import type { PolicyRule } from "./types.js";
import { RBAC_GROUP } from "./types.js";

// Cases after Kubernetes' pkg/registry/rbac/validation/policy_comparator_test.go.
const coverCases: { name: string; owner: PolicyRule[]; servant: PolicyRule[]; missing: PolicyRule[] }[] = [
  {
    name: "exact match",
    owner: [rule({ apiGroups: ["v1"], verbs: ["get"], resources: ["builds"] })],
    servant: [rule({ apiGroups: ["v1"], verbs: ["get"], resources: ["builds"] })],
    missing: [],
  },
  {
    name: "multiple rules cover a rule together",
    owner: [rule({ apiGroups: ["v1"], verbs: ["get"], resources: ["builds"] }), rule({ apiGroups: ["v1"], verbs: ["update"], resources: ["builds"] })],
    servant: [rule({ apiGroups: ["v1"], verbs: ["get", "update"], resources: ["builds"] })],
    missing: [],
  },
  {
    name: "star verb, group and resource cover everything",
    owner: [rule({ apiGroups: ["*"], verbs: ["*"], resources: ["*"] })],
    servant: [rule({ apiGroups: ["v1", "apps"], verbs: ["get", "delete"], resources: ["builds", "pods/log"], resourceNames: ["a"] })],
    missing: [],
  },
  {
    name: "a missing verb",
    owner: [rule({ apiGroups: ["v1"], verbs: ["get"], resources: ["builds"] })],
    servant: [rule({ apiGroups: ["v1"], verbs: ["get", "delete"], resources: ["builds"] })],
    missing: [rule({ apiGroups: ["v1"], verbs: ["delete"], resources: ["builds"] })],
  },
  {
    name: "names: an owner without names covers named, named does not cover unnamed",
    owner: [
      rule({ apiGroups: [""], verbs: ["get"], resources: ["secrets"] }),
      rule({ apiGroups: [""], verbs: ["update"], resources: ["secrets"], resourceNames: ["a"] }),
    ],
    servant: [
      rule({ apiGroups: [""], verbs: ["get"], resources: ["secrets"], resourceNames: ["x"] }),
      rule({ apiGroups: [""], verbs: ["update"], resources: ["secrets"], resourceNames: ["a", "b"] }),
      rule({ apiGroups: [""], verbs: ["update"], resources: ["secrets"] }),
    ],
    missing: [
      rule({ apiGroups: [""], verbs: ["update"], resources: ["secrets"], resourceNames: ["b"] }),
      rule({ apiGroups: [""], verbs: ["update"], resources: ["secrets"] }),
    ],
  },
  {
    name: "*/subresource covers any resource's subresource, a resource not its subresources",
    owner: [rule({ apiGroups: ["*"], verbs: ["get"], resources: ["*/scale", "pods"] })],
    servant: [rule({ apiGroups: ["apps"], verbs: ["get"], resources: ["deployments/scale", "pods/log"] })],
    missing: [rule({ apiGroups: ["apps"], verbs: ["get"], resources: ["pods/log"] })],
  },
  {
    name: "non-resource URLs: star suffix covers the prefix, exact otherwise",
    owner: [rule({ verbs: ["get"], nonResourceUrls: ["/apis/*", "/healthz"] })],
    servant: [rule({ verbs: ["get", "post"], nonResourceUrls: ["/apis/apps", "/healthz/ping", "/healthz"] })],
    missing: [
      rule({ verbs: ["get"], nonResourceUrls: ["/healthz/ping"] }),
      rule({ verbs: ["post"], nonResourceUrls: ["/apis/apps"] }),
      rule({ verbs: ["post"], nonResourceUrls: ["/healthz/ping"] }),
      rule({ verbs: ["post"], nonResourceUrls: ["/healthz"] }),
    ],
  },
  {
    name: "resource rules do not cover URLs",
    owner: [rule({ apiGroups: ["*"], verbs: ["*"], resources: ["*"] })],
    servant: [rule({ verbs: ["get"], nonResourceUrls: ["/metrics"] })],
    missing: [rule({ verbs: ["get"], nonResourceUrls: ["/metrics"] })],
  },
];

describe("covers", () => {
  for (const c of coverCases) {
    it(c.name, () => {
      const got = covers(c.owner, c.servant);
      assert.equal(got.covered, c.missing.length === 0);
      const key = (rs: PolicyRule[]) => rs.map(compactString).sort();
      assert.deepEqual(key(got.missing), key(c.missing));
    });
  }

  it("compacts verbs of one group and resource, and prints as Kubernetes", () => {
    const compact = compactRules([
      rule({ apiGroups: [""], resources: ["pods"], verbs: ["get"] }),
      rule({ apiGroups: [""], resources: ["pods"], verbs: ["list"] }),
      rule({ verbs: ["get"], nonResourceUrls: ["/x"] }),
    ]);
    assert.deepEqual(compact.map(compactString).sort(), [
      '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}',
      '{NonResourceURLs:["/x"], Verbs:["get"]}',
    ]);
    assert.equal(
      compactString(rule({ apiGroups: ["apps"], resources: ["deployments"], resourceNames: ["web"], verbs: ["update"] })),
      '{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["web"], Verbs:["update"]}',
    );
  });
});

describe("checkEscalation", () => {
  const podsAll = rule({ apiGroups: [""], resources: ["pods"], verbs: ["*"] });
  const src = new StaticSource(
    [role("ns1", "pod-admin", podsAll)],
    [
      clusterRole("cluster-admin", rule({ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }), rule({ verbs: ["*"], nonResourceUrls: ["*"] })),
      clusterRole(
        "rbac-writer",
        rule({ verbs: ["create", "update"], apiGroups: [RBAC_GROUP], resources: ["roles", "rolebindings", "clusterroles", "clusterrolebindings"] }),
      ),
      clusterRole("escalator", rule({ verbs: ["escalate"], apiGroups: [RBAC_GROUP], resources: ["roles"] })),
      clusterRole("binder", rule({ verbs: ["bind"], apiGroups: [RBAC_GROUP], resources: ["clusterroles"], resourceNames: ["cluster-admin"] })),
      clusterRole("everything", rule({ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }), rule({ verbs: ["*"], nonResourceUrls: ["*"] })),
    ],
    [
      roleBinding("ns1", "alice-pods", "Role", "pod-admin", userSubject("alice")),
      roleBinding("ns1", "alice-rbac", "ClusterRole", "rbac-writer", userSubject("alice")),
      roleBinding("ns1", "esc", "ClusterRole", "escalator", userSubject("erin")),
      roleBinding("ns1", "bind", "ClusterRole", "binder", userSubject("bert")),
    ],
    [clusterRoleBinding("root", "everything", userSubject("root"))],
  );
  const rbac = new RbacAuthorizer(src);
  const alice = user("alice", "system:authenticated", "devs");

  const roleReq = (ns: string, name: string, ...rules: PolicyRule[]): EscalationRequest => ({
    resource: ns ? "roles" : "clusterroles",
    namespace: ns,
    name,
    role: { metadata: { name, namespace: ns }, rules },
  });
  const bindingReq = (ns: string, name: string, kind: "Role" | "ClusterRole", ref: string): EscalationRequest => ({
    resource: ns ? "rolebindings" : "clusterrolebindings",
    namespace: ns,
    name,
    binding: roleBinding(ns, name, kind, ref, userSubject("mallory")),
  });
  function forbidden(f: () => void): string {
    try {
      f();
    } catch (err) {
      assert.ok(err instanceof ApiError, String(err));
      assert.equal(err.code, 403);
      assert.equal(err.reason, "Forbidden");
      return err.message;
    }
    assert.fail("not refused");
  }

  it("a Role granting what one holds is allowed, more is a 403 naming what is missing", () => {
    checkEscalation(alice, roleReq("ns1", "r", rule({ apiGroups: [""], resources: ["pods"], verbs: ["get", "delete"] })), rbac, rbac);
    const msg = forbidden(() =>
      checkEscalation(alice, roleReq("ns1", "r", rule({ apiGroups: [""], resources: ["pods", "secrets"], verbs: ["get", "list"] })), rbac, rbac),
    );
    assert.equal(
      msg,
      'roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" (groups=["system:authenticated" "devs"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}',
    );
    // In another namespace alice holds nothing.
    forbidden(() => checkEscalation(alice, roleReq("ns2", "r", rule({ apiGroups: [""], resources: ["pods"], verbs: ["get"] })), rbac, rbac));
    // A ClusterRole is checked against cluster-wide rules only.
    forbidden(() => checkEscalation(alice, roleReq("", "cr", rule({ apiGroups: [""], resources: ["pods"], verbs: ["get"] })), rbac, rbac));
  });

  it("escalate on roles allows any Role", () => {
    checkEscalation(user("erin"), roleReq("ns1", "r", rule({ apiGroups: ["*"], resources: ["*"], verbs: ["*"] })), rbac, rbac);
    forbidden(() => checkEscalation(user("erin"), roleReq("ns2", "r", rule({ apiGroups: ["*"], resources: ["*"], verbs: ["*"] })), rbac, rbac));
  });

  it("an aggregationRule needs every permission", () => {
    const agg: EscalationRequest = {
      resource: "clusterroles",
      namespace: "",
      name: "agg",
      role: { metadata: { name: "agg" }, rules: [], aggregationRule: { clusterRoleSelectors: [{}] } },
    };
    checkEscalation(user("root"), agg, rbac, rbac);
    assert.match(
      forbidden(() => checkEscalation(alice, agg, rbac, rbac)),
      /^clusterroles\.rbac\.authorization\.k8s\.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule$/,
    );
  });

  it("a binding needs the referenced role's permissions, or bind on it", () => {
    checkEscalation(alice, bindingReq("ns1", "b", "Role", "pod-admin"), rbac, rbac);
    const msg = forbidden(() => checkEscalation(alice, bindingReq("ns1", "b", "ClusterRole", "cluster-admin"), rbac, rbac));
    assert.match(msg, /^rolebindings\.rbac\.authorization\.k8s\.io "b" is forbidden: user "alice" .* not currently held:\n/);
    assert.match(msg, /\{NonResourceURLs:\["\*"\], Verbs:\["\*"\]\}/);
    // bert may bind cluster-admin (by name) in ns1, nothing else, nowhere else.
    checkEscalation(user("bert"), bindingReq("ns1", "b", "ClusterRole", "cluster-admin"), rbac, rbac);
    forbidden(() => checkEscalation(user("bert"), bindingReq("ns1", "b", "ClusterRole", "everything"), rbac, rbac));
    forbidden(() => checkEscalation(user("bert"), bindingReq("ns2", "b", "ClusterRole", "cluster-admin"), rbac, rbac));
    forbidden(() => checkEscalation(user("bert"), bindingReq("", "b", "ClusterRole", "cluster-admin"), rbac, rbac));
  });

  it("a binding to a role that does not exist is refused with the lookup's error", () => {
    assert.equal(
      forbidden(() => checkEscalation(alice, bindingReq("ns1", "b", "Role", "nope"), rbac, rbac)),
      'rolebindings.rbac.authorization.k8s.io "b" is forbidden: role.rbac.authorization.k8s.io "nope" not found',
    );
  });

  it("system:masters may always", () => {
    checkEscalation(user("m", "system:masters"), bindingReq("", "b", "ClusterRole", "cluster-admin"), rbac, rbac);
    checkEscalation(user("m", "system:masters"), roleReq("", "cr", rule({ verbs: ["*"], nonResourceUrls: ["*"] })), rbac, rbac);
  });
});
