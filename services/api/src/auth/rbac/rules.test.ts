import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Attributes } from "../types.js";
import { appliesTo, appliesToUser, describeSubject, ruleAllows } from "./rules.js";
import { groupSubject, policyRule, saSubject, user, userSubject } from "./testing.js";
import type { PolicyRule } from "./types.js";

const alice = user("alice");

function resource(verb: string, apiGroup: string, res: string, opts: { sub?: string; name?: string; ns?: string } = {}): Attributes {
  return {
    user: alice,
    verb,
    resourceRequest: true,
    apiGroup,
    apiVersion: "v1",
    resource: res,
    subresource: opts.sub ?? "",
    namespace: opts.ns ?? "",
    name: opts.name ?? "",
    path: "",
  };
}

function nonResource(verb: string, path: string): Attributes {
  return { user: alice, verb, resourceRequest: false, apiGroup: "", apiVersion: "", resource: "", subresource: "", namespace: "", name: "", path };
}

// The cases of Kubernetes' plugin/pkg/auth/authorizer/rbac/rbac_test.go TestRuleMatches, and more.
const cases: { name: string; rule: PolicyRule; expect: [Attributes, boolean][] }[] = [
  {
    name: "star verb, exact match other",
    rule: policyRule({ verbs: ["*"], apiGroups: ["group1"], resources: ["resource1"] }),
    expect: [
      [resource("get", "group1", "resource1"), true],
      [resource("get", "group2", "resource1"), false],
      [resource("get", "group1", "resource2"), false],
      [resource("get", "group2", "resource2"), false],
      [resource("update", "group1", "resource1"), true],
      [resource("update", "group2", "resource1"), false],
    ],
  },
  {
    name: "star group, exact match other",
    rule: policyRule({ verbs: ["get"], apiGroups: ["*"], resources: ["resource1"] }),
    expect: [
      [resource("get", "group1", "resource1"), true],
      [resource("get", "group2", "resource1"), true],
      [resource("get", "group1", "resource2"), false],
      [resource("update", "group1", "resource1"), false],
    ],
  },
  {
    name: "star resource, exact match other",
    rule: policyRule({ verbs: ["get"], apiGroups: ["group1"], resources: ["*"] }),
    expect: [
      [resource("get", "group1", "resource1"), true],
      [resource("get", "group2", "resource1"), false],
      [resource("get", "group1", "resource2"), true],
      [resource("get", "group1", "resource1", { sub: "status" }), true],
      [resource("update", "group1", "resource1"), false],
    ],
  },
  {
    name: "tuple expansion",
    rule: policyRule({ verbs: ["get", "update"], apiGroups: ["group1", "group2"], resources: ["resource1", "resource2"] }),
    expect: [
      [resource("get", "group1", "resource1"), true],
      [resource("get", "group2", "resource1"), true],
      [resource("get", "group1", "resource2"), true],
      [resource("get", "group2", "resource2"), true],
      [resource("update", "group2", "resource2"), true],
      [resource("delete", "group1", "resource1"), false],
      [resource("get", "group3", "resource1"), false],
    ],
  },
  {
    name: "subresource expansion",
    rule: policyRule({ verbs: ["*"], apiGroups: ["*"], resources: ["resource1/subresource1"] }),
    expect: [
      [resource("get", "group1", "resource1", { sub: "subresource1" }), true],
      [resource("get", "group1", "resource1", { sub: "subresource2" }), false],
      [resource("get", "group1", "resource2", { sub: "subresource1" }), false],
      [resource("get", "group1", "resource1"), false],
    ],
  },
  {
    name: "*/subresource: any resource's",
    rule: policyRule({ verbs: ["get"], apiGroups: [""], resources: ["*/log"] }),
    expect: [
      [resource("get", "", "pods", { sub: "log" }), true],
      [resource("get", "", "nodes", { sub: "log" }), true],
      [resource("get", "", "pods", { sub: "logs" }), false],
      [resource("get", "", "pods", { sub: "exec" }), false],
      [resource("get", "", "pods"), false],
    ],
  },
  {
    name: "resource/* is no wildcard (as Kubernetes)",
    rule: policyRule({ verbs: ["get"], apiGroups: [""], resources: ["pods/*"] }),
    expect: [
      [resource("get", "", "pods", { sub: "log" }), false],
      [resource("get", "", "pods"), false],
    ],
  },
  {
    name: "resource does not grant its subresources",
    rule: policyRule({ verbs: ["*"], apiGroups: [""], resources: ["pods"] }),
    expect: [
      [resource("create", "", "pods", { sub: "exec" }), false],
      [resource("get", "", "pods", { name: "p" }), true],
    ],
  },
  {
    name: "resourceNames: only requests naming one",
    rule: policyRule({ verbs: ["*"], apiGroups: [""], resources: ["configmaps"], resourceNames: ["a", "b"] }),
    expect: [
      [resource("get", "", "configmaps", { name: "a" }), true],
      [resource("update", "", "configmaps", { name: "b" }), true],
      [resource("get", "", "configmaps", { name: "c" }), false],
      [resource("list", "", "configmaps"), false],
      [resource("watch", "", "configmaps"), false],
      [resource("create", "", "configmaps"), false],
      [resource("deletecollection", "", "configmaps"), false],
    ],
  },
  {
    name: "star nonresource, exact match other",
    rule: policyRule({ verbs: ["get"], nonResourceUrls: ["*"] }),
    expect: [
      [nonResource("get", "/foo"), true],
      [nonResource("get", "/foo/bar"), true],
      [nonResource("post", "/foo"), false],
      [resource("get", "group1", "resource1"), false],
    ],
  },
  {
    name: "star nonresource subpath",
    rule: policyRule({ verbs: ["*"], nonResourceUrls: ["/foo/*"] }),
    expect: [
      [nonResource("get", "/foo"), false],
      [nonResource("get", "/foo/bar"), true],
      [nonResource("get", "/foo/baz"), true],
      [nonResource("get", "/foo/bar/one"), true],
      [nonResource("get", "/foo/baz/one"), true],
      [nonResource("get", "/notfoo"), false],
      [nonResource("get", "/notfoo/bar"), false],
      [nonResource("get", "/notfoo/baz"), false],
      [nonResource("get", "/notfoo/bar/one"), false],
      [nonResource("get", "/notfoo/baz/one"), false],
    ],
  },
  {
    name: "star verb, exact nonresource",
    rule: policyRule({ verbs: ["*"], nonResourceUrls: ["/foo", "/foo/bar/one"] }),
    expect: [
      [nonResource("get", "/foo"), true],
      [nonResource("get", "/foo/bar"), false],
      [nonResource("get", "/foo/baz"), false],
      [nonResource("get", "/foo/bar/one"), true],
      [nonResource("get", "/foo/baz/one"), false],
      [nonResource("post", "/foo"), true],
    ],
  },
  {
    name: "a resource rule grants no path, a path rule no resource",
    rule: policyRule({ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }),
    expect: [
      [nonResource("get", "/healthz"), false],
      [resource("get", "", "pods"), true],
    ],
  },
];

describe("rbac rules", () => {
  for (const c of cases) {
    it(c.name, () => {
      for (const [a, want] of c.expect) {
        const what = a.resourceRequest
          ? `${a.verb} ${a.apiGroup}/${a.resource}${a.subresource ? "/" + a.subresource : ""} name=${a.name}`
          : `${a.verb} ${a.path}`;
        assert.equal(ruleAllows(a, c.rule), want, what);
      }
    });
  }
});

// Kubernetes' pkg/registry/rbac/validation/rule_test.go TestAppliesTo.
describe("rbac subjects", () => {
  const sa = user("system:serviceaccount:kube-system:default", "system:serviceaccounts", "system:serviceaccounts:kube-system");
  const table = [
    { name: "single subject that matches username", subjects: [userSubject("foobar")], user: user("foobar"), ns: "", index: 0 },
    { name: "multiple subjects, the second matches", subjects: [userSubject("barfoo"), userSubject("foobar")], user: user("foobar"), ns: "", index: 1 },
    { name: "no subject matches", subjects: [userSubject("barfoo"), userSubject("foobar")], user: user("zimzam"), ns: "", index: -1 },
    { name: "a group matches", subjects: [userSubject("barfoo"), groupSubject("foobar")], user: user("zimzam", "foobar"), ns: "", index: 1 },
    { name: "a group does not match a user name", subjects: [groupSubject("zimzam")], user: user("zimzam", "foobar"), ns: "", index: -1 },
    { name: "service account with its namespace", subjects: [saSubject("default", "kube-system")], user: sa, ns: "", index: 0 },
    { name: "service account defaults to the binding's namespace", subjects: [saSubject("default")], user: sa, ns: "kube-system", index: 0 },
    { name: "service account without namespace in a cluster binding", subjects: [saSubject("default")], user: sa, ns: "", index: -1 },
    { name: "service account of another namespace", subjects: [saSubject("default", "default")], user: sa, ns: "kube-system", index: -1 },
    { name: "service account name mismatch", subjects: [saSubject("builder", "kube-system")], user: sa, ns: "", index: -1 },
    { name: "a User subject named as the service account", subjects: [userSubject("system:serviceaccount:kube-system:default")], user: sa, ns: "", index: 0 },
    { name: "the service accounts group", subjects: [groupSubject("system:serviceaccounts:kube-system")], user: sa, ns: "", index: 0 },
    { name: "unknown kind", subjects: [{ kind: "Robot", apiGroup: "", name: "foobar", namespace: "" }], user: user("foobar"), ns: "", index: -1 },
  ];
  for (const c of table) {
    it(c.name, () => {
      assert.equal(appliesTo(c.user, c.subjects, c.ns), c.index);
      assert.equal(
        c.subjects.some((s) => appliesToUser(c.user, s, c.ns)),
        c.index >= 0,
      );
    });
  }

  it("describes subjects as Kubernetes", () => {
    assert.equal(describeSubject(userSubject("alice"), ""), 'User "alice"');
    assert.equal(describeSubject(groupSubject("devs"), "ns"), 'Group "devs"');
    assert.equal(describeSubject(saSubject("builder"), "ci"), 'ServiceAccount "builder/ci"');
    assert.equal(describeSubject(saSubject("builder", "prod"), "ci"), 'ServiceAccount "builder/prod"');
  });
});
