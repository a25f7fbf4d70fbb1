// authorization.k8s.io/v1 and authentication.k8s.io/v1 reviews on Kubernetes'
// protobuf wire (kubectl auth can-i and whoami send them so): Kubernetes
// 1.32's field numbers, checked on a few fields, ExtraValue (a message of
// `items` in protobuf, a bare array in JSON), and whole reviews through the
// envelope and back.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decodeMessage, decodeObject, encodeMessage, encodeObject, type KubeJson } from "./index.js";

const AUTHZ = "k8s.io.api.authorization.v1";
const AUTHN = "k8s.io.api.authentication.v1";

const reviews: KubeJson[] = [
  {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SelfSubjectAccessReview",
    metadata: { creationTimestamp: "2026-11-26T01:00:00Z" },
    spec: {
      resourceAttributes: { namespace: "dev", verb: "create", group: "apps", version: "v1", resource: "deployments", subresource: "scale", name: "web" },
    },
    status: { allowed: false, reason: "no RBAC policy matched", denied: true },
  },
  {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SubjectAccessReview",
    metadata: {},
    spec: {
      nonResourceAttributes: { path: "/healthz", verb: "get" },
      user: "alice",
      groups: ["dev", "system:authenticated"],
      extra: { scopes: ["a", "b"], empty: [] },
      uid: "u1",
    },
    status: { allowed: true, evaluationError: "partial" },
  },
  {
    apiVersion: "authorization.k8s.io/v1",
    kind: "LocalSubjectAccessReview",
    metadata: { namespace: "dev" },
    spec: { resourceAttributes: { namespace: "dev", verb: "list", resource: "pods", labelSelector: { rawSelector: "app=web" } }, user: "bob" },
    status: { allowed: false },
  },
  {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SelfSubjectRulesReview",
    metadata: {},
    spec: { namespace: "dev" },
    status: {
      resourceRules: [{ verbs: ["get", "list"], apiGroups: [""], resources: ["pods", "pods/log"], resourceNames: ["a"] }],
      nonResourceRules: [{ verbs: ["get"], nonResourceURLs: ["/healthz", "/api/*"] }],
      incomplete: false,
    },
  },
  {
    apiVersion: "authentication.k8s.io/v1",
    kind: "SelfSubjectReview",
    metadata: { creationTimestamp: "2026-11-26T01:00:00Z" },
    status: { userInfo: { username: "alice", uid: "u1", groups: ["dev", "system:authenticated"], extra: { "authentication.kubernetes.io/pod-name": ["p"] } } },
  },
  {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenReview",
    metadata: {},
    spec: { token: "abc.def", audiences: ["https://kubernetes.default.svc"] },
    status: {
      authenticated: true,
      user: { username: "system:serviceaccount:dev:app", groups: ["system:serviceaccounts"] },
      audiences: ["https://kubernetes.default.svc"],
    },
  },
];

describe("access and identity reviews on the protobuf wire", () => {
  it("uses Kubernetes' field numbers", () => {
    // SubjectAccessReviewStatus: allowed 1, reason 2, evaluationError 3, denied 4.
    assert.deepEqual([...encodeMessage(`${AUTHZ}.SubjectAccessReviewStatus`, { allowed: true, denied: false })], [1 << 3, 1, 4 << 3, 0]);
    // ResourceAttributes: namespace 1, verb 2, group 3, version 4, resource 5, subresource 6, name 7.
    assert.equal(encodeMessage(`${AUTHZ}.ResourceAttributes`, { name: "x" })[0], (7 << 3) | 2);
    assert.equal(encodeMessage(`${AUTHZ}.ResourceAttributes`, { resource: "x" })[0], (5 << 3) | 2);
    // SubjectAccessReviewSpec: uid 6; SubjectRulesReviewStatus: incomplete 3.
    assert.equal(encodeMessage(`${AUTHZ}.SubjectAccessReviewSpec`, { uid: "x" })[0], (6 << 3) | 2);
    assert.deepEqual([...encodeMessage(`${AUTHZ}.SubjectRulesReviewStatus`, { incomplete: true })], [3 << 3, 1]);
    // SelfSubjectReview: status 2; TokenReviewStatus: audiences 4.
    assert.equal(encodeMessage(`${AUTHN}.SelfSubjectReview`, { status: {} })[0], (2 << 3) | 2);
    assert.equal(encodeMessage(`${AUTHN}.TokenReviewStatus`, { audiences: ["a"] })[0], (4 << 3) | 2);
  });

  it("writes ExtraValue as a message of items and reads it back as an array", () => {
    const bytes = encodeMessage(`${AUTHN}.UserInfo`, { extra: { k: ["a", "b"] } });
    // extra (4) → map entry {key 1 "k", value 2 ExtraValue{items 1 "a", items 1 "b"}}.
    const value = [0x0a, 1, 0x61, 0x0a, 1, 0x62];
    const entry = [0x0a, 1, 0x6b, 0x12, value.length, ...value];
    assert.deepEqual([...bytes], [(4 << 3) | 2, entry.length, ...entry]);
    assert.deepEqual(decodeMessage(`${AUTHN}.UserInfo`, bytes), { extra: { k: ["a", "b"] } });
    assert.throws(() => encodeMessage(`${AUTHN}.UserInfo`, { extra: { k: "a" } }), /expected an array of strings/);
  });

  for (const obj of reviews) {
    it(`a ${String(obj["kind"])} goes through the envelope and back unchanged`, () => {
      assert.deepEqual(decodeObject(encodeObject(obj)), obj);
    });
  }
});
