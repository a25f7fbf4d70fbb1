// The policy checker, table-driven from Kubernetes' own checker tests
// (staging/src/k8s.io/apiserver/pkg/audit/policy/checker_test.go), and the
// policy file's validation.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Attributes, UserInfo } from "../auth/types.js";
import { AuditPolicyError, DEFAULT_POLICY, evaluatePolicy, parsePolicy, validatePolicy, type Level, type Policy, type Stage } from "./policy.js";

const tim: UserInfo = { name: "tim@k8s.io", uid: "", groups: ["humans", "developers"], extra: {} };
const nobody: UserInfo = { name: "", uid: "", groups: [], extra: {} };

function attrs(a: Partial<Attributes>): Attributes {
  return {
    user: tim,
    verb: "get",
    resourceRequest: true,
    apiGroup: "",
    apiVersion: "v1",
    resource: "",
    subresource: "",
    namespace: "",
    name: "",
    path: "",
    ...a,
  };
}

const requests: Record<string, Attributes> = {
  namespaced: attrs({ namespace: "default", resource: "pods", name: "busybox", path: "/api/v1/namespaces/default/pods/busybox" }),
  cluster: attrs({
    apiGroup: "rbac.authorization.k8s.io",
    apiVersion: "v1beta1",
    resource: "clusterroles",
    name: "edit",
    path: "/apis/rbac.authorization.k8s.io/v1beta1/clusterroles/edit",
  }),
  nonResource: attrs({ resourceRequest: false, apiVersion: "", path: "/logs/kubelet.log" }),
  subresource: attrs({ namespace: "default", resource: "pods", subresource: "log", name: "busybox", path: "/api/v1/namespaces/default/pods/busybox" }),
  Unauthorized: attrs({ user: nobody, namespace: "default", resource: "pods", name: "busybox", path: "/api/v1/namespaces/default/pods/busybox" }),
};

// The rules of checker_test.go, in the file's YAML form (which is also what parsePolicy reads).
const rules: Record<string, unknown> = {
  default: { level: "Metadata" },
  create: { level: "Request", verbs: ["create"] },
  tims: { level: "Metadata", users: ["tim@k8s.io"] },
  humans: { level: "Metadata", userGroups: ["humans"] },
  serviceAccounts: { level: "Request", userGroups: ["system:serviceaccounts"] },
  getPods: { level: "RequestResponse", verbs: ["get"], resources: [{ resources: ["pods"] }] },
  getPodLogs: { level: "Request", verbs: ["get"], resources: [{ resources: ["pods/log"] }] },
  getPodWildcardMatching: { level: "Request", verbs: ["get"], resources: [{ resources: ["*"] }] },
  getPodResourceWildcardMatching: { level: "Request", verbs: ["get"], resources: [{ resources: ["*/log"] }] },
  getPodSubResourceWildcardMatching: { level: "Request", verbs: ["get"], resources: [{ resources: ["pods/*"] }] },
  getClusterRoles: {
    level: "RequestResponse",
    verbs: ["get"],
    resources: [{ group: "rbac.authorization.k8s.io", resources: ["clusterroles"] }],
    namespaces: [""],
  },
  getLogs: { level: "RequestResponse", verbs: ["get"], nonResourceURLs: ["/logs*"] },
  getMetrics: { level: "Request", verbs: ["get"], nonResourceURLs: ["/metrics"] },
  clusterRoleEdit: { level: "Request", resources: [{ group: "rbac.authorization.k8s.io", resources: ["clusterroles"], resourceNames: ["edit"] }] },
  "omit RequestReceived": { level: "Request", omitStages: ["RequestReceived"] },
  "only audit panic": { level: "Request", omitStages: ["RequestReceived", "ResponseStarted", "ResponseComplete"] },
};

function policyOf(names: string[], omitStages: Stage[] = []): Policy {
  return validatePolicy({ apiVersion: "audit.k8s.io/v1", kind: "Policy", omitStages, rules: names.map((n) => rules[n]) });
}

type Case = [request: string, level: Level, ...rules: string[]];
const levelCases: Case[] = [
  ["namespaced", "Metadata", "default"],
  ["namespaced", "None", "create"],
  ["namespaced", "Metadata", "tims"],
  ["namespaced", "Metadata", "humans"],
  ["namespaced", "None", "serviceAccounts"],
  ["namespaced", "RequestResponse", "getPods"],
  ["namespaced", "None", "getClusterRoles"],
  ["namespaced", "None", "getLogs"],
  ["namespaced", "None", "getMetrics"],
  ["namespaced", "Metadata", "getMetrics", "serviceAccounts", "default"],
  ["namespaced", "RequestResponse", "getMetrics", "getPods", "default"],
  ["namespaced", "RequestResponse", "getPodLogs", "getPods"],
  ["cluster", "Metadata", "default"],
  ["cluster", "None", "create"],
  ["cluster", "Metadata", "tims"],
  ["cluster", "Metadata", "humans"],
  ["cluster", "None", "serviceAccounts"],
  ["cluster", "None", "getPods"],
  ["cluster", "RequestResponse", "getClusterRoles"],
  ["cluster", "Request", "clusterRoleEdit", "getClusterRoles"],
  ["cluster", "None", "getLogs"],
  ["cluster", "None", "getMetrics"],
  ["cluster", "Metadata", "getMetrics", "serviceAccounts", "default"],
  ["cluster", "RequestResponse", "getMetrics", "getClusterRoles", "default"],
  ["cluster", "None", "getPodLogs", "getPods"],
  ["nonResource", "Metadata", "default"],
  ["nonResource", "None", "create"],
  ["nonResource", "Metadata", "tims"],
  ["nonResource", "Metadata", "humans"],
  ["nonResource", "None", "serviceAccounts"],
  ["nonResource", "None", "getPods"],
  ["nonResource", "None", "getClusterRoles"],
  ["nonResource", "RequestResponse", "getLogs"],
  ["nonResource", "None", "getMetrics"],
  ["nonResource", "Metadata", "getMetrics", "serviceAccounts", "default"],
  ["nonResource", "RequestResponse", "getLogs", "getClusterRoles", "default"],
  ["nonResource", "None", "getPodLogs", "getPods"],
  ["subresource", "Request", "getPodLogs", "getPods"],
  ["subresource", "Request", "getPodWildcardMatching"],
  ["subresource", "Request", "getPodResourceWildcardMatching"],
  ["subresource", "Request", "getPodSubResourceWildcardMatching"],
  ["Unauthorized", "None", "tims"],
  ["Unauthorized", "Metadata", "tims", "default"],
  ["Unauthorized", "None", "humans"],
  ["Unauthorized", "Metadata", "humans", "default"],
];

function sameStages(a: Stage[], b: Stage[]): boolean {
  return new Set(a).size === new Set(b).size && a.every((s) => b.includes(s));
}

describe("audit policy checker (Kubernetes' checker_test table)", () => {
  for (const policyStages of [[], ["RequestReceived", "ResponseStarted"]] as Stage[][]) {
    it(`levels, policy omitStages [${policyStages.join(",")}]`, () => {
      for (const [req, level, ...names] of levelCases) {
        const got = evaluatePolicy(policyOf(names, policyStages), requests[req]);
        assert.equal(got.level, level, `request ${req}, rules ${names.join(",")}`);
        assert.ok(sameStages(got.omitStages, policyStages), `request ${req}, rules ${names.join(",")}: stages ${got.omitStages.join(",")}`);
      }
    });
  }

  it("a rule's omitStages join the policy's", () => {
    const cases: [string, Stage[], Level, Stage[], ...string[]][] = [
      ["namespaced", [], "Request", ["RequestReceived"], "omit RequestReceived", "getPods", "default"],
      ["namespaced", [], "Request", ["RequestReceived", "ResponseStarted", "ResponseComplete"], "only audit panic", "getPods", "default"],
      ["cluster", [], "Request", ["RequestReceived"], "omit RequestReceived", "getPods", "default"],
      ["nonResource", [], "Request", ["RequestReceived"], "omit RequestReceived", "getPods", "default"],
      ["namespaced", ["RequestReceived", "ResponseStarted"], "Request", ["RequestReceived", "ResponseStarted"], "omit RequestReceived", "getPods", "default"],
      ["nonResource", ["RequestReceived", "ResponseStarted"], "Metadata", ["RequestReceived", "ResponseStarted"], "default", "omit RequestReceived", "getPods"],
      [
        "cluster",
        ["RequestReceived", "ResponseStarted"],
        "Request",
        ["RequestReceived", "ResponseStarted", "ResponseComplete"],
        "only audit panic",
        "getPods",
        "default",
      ],
    ];
    for (const [req, policyStages, level, stages, ...names] of cases) {
      const got = evaluatePolicy(policyOf(names, policyStages), requests[req]);
      assert.equal(got.level, level, `request ${req}, rules ${names.join(",")}`);
      assert.ok(sameStages(got.omitStages, stages), `request ${req}, rules ${names.join(",")}: stages ${got.omitStages.join(",")}`);
    }
  });

  it("resource/* matches the resource itself; */status any status; resourceNames restrict", () => {
    const p = parsePolicy(`
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: RequestResponse
  resources: [{group: "", resources: ["*/status"]}]
- level: Request
  resources: [{group: "", resources: ["configmaps"], resourceNames: ["kube-root-ca.crt"]}]
- level: None
  resources: [{group: "", resources: ["pods/*"]}]
- level: Metadata
`);
    const lvl = (a: Partial<Attributes>) => evaluatePolicy(p, attrs({ namespace: "default", ...a })).level;
    assert.equal(lvl({ resource: "nodes", subresource: "status", namespace: "" }), "RequestResponse");
    assert.equal(lvl({ resource: "pods", subresource: "status" }), "RequestResponse");
    assert.equal(lvl({ resource: "pods" }), "None");
    assert.equal(lvl({ resource: "pods", subresource: "exec" }), "None");
    assert.equal(lvl({ resource: "configmaps", name: "kube-root-ca.crt" }), "Request");
    assert.equal(lvl({ resource: "configmaps", name: "other" }), "Metadata");
    assert.equal(lvl({ resource: "configmaps" }), "Metadata");
  });

  it("the default policy: nothing for health, version, lease reads, nodes reading Nodes and Events; Metadata for the rest", () => {
    const lvl = (a: Partial<Attributes>) => evaluatePolicy(DEFAULT_POLICY, attrs(a)).level;
    for (const path of ["/healthz", "/readyz", "/readyz/ping", "/livez", "/version"]) assert.equal(lvl({ resourceRequest: false, path }), "None", path);
    assert.equal(lvl({ resourceRequest: false, path: "/apis" }), "Metadata");
    for (const verb of ["get", "list", "watch"])
      assert.equal(lvl({ verb, apiGroup: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease" }), "None", verb);
    assert.equal(lvl({ verb: "update", apiGroup: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease" }), "Metadata");
    assert.equal(lvl({ verb: "create", resource: "secrets", namespace: "default" }), "Metadata");
    // A node reading a Node: nothing (the kubelet's status check every 10 s); a node writing one, or anyone else reading it: Metadata.
    const node = { user: { name: "system:node:n1", uid: "", groups: ["system:nodes", "system:authenticated"], extra: {} } };
    assert.equal(lvl({ ...node, verb: "get", resource: "nodes", name: "n1" }), "None");
    assert.equal(lvl({ ...node, verb: "get", resource: "nodes", subresource: "status", name: "n1" }), "None");
    assert.equal(lvl({ ...node, verb: "update", resource: "nodes", subresource: "status", name: "n1" }), "Metadata");
    assert.equal(lvl({ ...node, verb: "list", resource: "nodes" }), "Metadata");
    assert.equal(lvl({ verb: "get", resource: "nodes", name: "n1" }), "Metadata");
    // Events of either group, by anyone: nothing.
    for (const apiGroup of ["", "events.k8s.io"]) {
      for (const verb of ["create", "patch", "list", "delete"])
        assert.equal(lvl({ verb, apiGroup, resource: "events", namespace: "default" }), "None", `${apiGroup} ${verb}`);
    }
  });
});

describe("audit policy file validation", () => {
  const bad = (text: string, message: RegExp) =>
    assert.throws(
      () => parsePolicy(text),
      (err: Error) => err instanceof AuditPolicyError && message.test(err.message),
    );

  it("JSON and YAML forms read the same", () => {
    const yaml = parsePolicy(
      "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Request\n  verbs: [create]\n- level: Metadata\n",
    );
    const json = parsePolicy(
      JSON.stringify({
        apiVersion: "audit.k8s.io/v1",
        kind: "Policy",
        omitStages: ["RequestReceived"],
        rules: [{ level: "Request", verbs: ["create"] }, { level: "Metadata" }],
      }),
    );
    assert.deepEqual(yaml, json);
    assert.equal(yaml.rules.length, 2);
  });

  it("names the rule of a bad or missing level", () => {
    bad("rules:\n- level: Metadata\n- level: Everything\n", /rules\[1\]\.level: Unsupported value: "Everything"/);
    bad("rules:\n- verbs: [get]\n", /rules\[0\]\.level: Required value/);
  });

  it("refuses what the apiserver refuses", () => {
    bad("kind: Policy\n", /rules: Required value/);
    bad("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: []\n", /apiVersion: Unsupported value/);
    bad("kind: Pod\nrules: []\n", /kind: Invalid value/);
    bad(
      "rules:\n- level: None\n  nonResourceURLs: [/healthz]\n  resources: [{resources: [pods]}]\n",
      /rules\[0\]\.nonResourceURLs: Invalid value: rules cannot apply to both/,
    );
    bad("rules:\n- level: None\n  nonResourceURLs: ['/a*b']\n", /rules\[0\]\.nonResourceURLs\[0\]/);
    bad("rules:\n- level: None\n  omitStages: [Sometimes]\n", /rules\[0\]\.omitStages\[0\]: Unsupported value: "Sometimes"/);
    bad("omitStages: [Never]\nrules: []\n", /^audit policy: omitStages\[0\]/);
    bad("rules:\n- level: None\n  resources: [{resources: ['p*ds']}]\n", /rules\[0\]\.resources\[0\]\.resources\[0\]/);
    bad("rules:\n- level: None\n  verbs: get\n", /rules\[0\]\.verbs: Invalid value/);
    bad("rules: [", /not YAML or JSON/);
  });
});
