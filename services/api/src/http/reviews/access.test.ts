// The access reviews as pure functions over a table authorizer: attributes
// passed on as Kubernetes' util.ResourceAttributesFrom builds them, the
// status as the apiserver writes it, and the 422s and 400s of bad reviews.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApiError } from "@choreo/kit";
import { AuthorizerChain } from "../../auth/authorize.js";
import type { Attributes, Authorizer, Decision, UserInfo } from "../../auth/types.js";
import { localSubjectAccessReview, selfSubjectAccessReview, selfSubjectRulesReview, subjectAccessReview } from "./access.js";
import type { RulesOf } from "./types.js";

const alice: UserInfo = { name: "alice", uid: "u-alice", groups: ["dev", "system:authenticated"], extra: {} };

/** Records what it was asked; allows `create pods` in dev, denies explicitly anything on secrets, no opinion otherwise. */
class TableAuthorizer implements Authorizer {
  asked: Attributes[] = [];
  authorize(a: Attributes): Decision {
    this.asked.push(a);
    if (a.resource === "secrets") return { allowed: false, denied: true, reason: "secrets are off limits" };
    if (a.resourceRequest && a.verb === "create" && a.resource === "pods" && a.namespace === "dev") return { allowed: true, reason: "dev may create pods" };
    if (!a.resourceRequest && a.path === "/healthz" && a.verb === "get") return { allowed: true, reason: "" };
    return { allowed: false, reason: "" };
  }
}

function status422(fields: string[]): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status.code, 422, err.status.message);
    assert.deepEqual(
      err.status.details?.causes.map((c) => c.field),
      fields,
    );
    return true;
  };
}

function status400(pattern: RegExp): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status.code, 400);
    assert.match(err.status.message, pattern);
    return true;
  };
}

const ssar = (spec: Record<string, unknown>): Record<string, unknown> => ({
  apiVersion: "authorization.k8s.io/v1",
  kind: "SelfSubjectAccessReview",
  metadata: { creationTimestamp: null },
  spec,
});

describe("SelfSubjectAccessReview", () => {
  it("asks the authorizer about the caller with the spec's attributes, version * when empty", () => {
    const z = new TableAuthorizer();
    const out = selfSubjectAccessReview(alice, z, ssar({ resourceAttributes: { namespace: "dev", verb: "create", resource: "pods" } }));
    assert.deepEqual(out["status"], { allowed: true, reason: "dev may create pods" });
    assert.deepEqual(z.asked, [
      {
        user: alice,
        verb: "create",
        resourceRequest: true,
        apiGroup: "",
        apiVersion: "*",
        resource: "pods",
        subresource: "",
        namespace: "dev",
        name: "",
        path: "",
      },
    ]);
    assert.equal(out["kind"], "SelfSubjectAccessReview");
    assert.deepEqual(out["spec"], { resourceAttributes: { namespace: "dev", verb: "create", resource: "pods" } });
  });

  it("system:masters through the chain: allowed with no reason, as the apiserver's privileged-group authorizer answers", () => {
    const admin: UserInfo = { name: "admin", uid: "", groups: ["system:masters", "system:authenticated"], extra: {} };
    const z = new TableAuthorizer();
    const out = selfSubjectAccessReview(admin, new AuthorizerChain([z]), ssar({ resourceAttributes: { namespace: "x", verb: "delete", resource: "nodes" } }));
    assert.deepEqual(out["status"], { allowed: true });
    assert.deepEqual(z.asked, [], "nothing after it is asked");
  });

  it("passes group, version, subresource and name", () => {
    const z = new TableAuthorizer();
    selfSubjectAccessReview(
      alice,
      z,
      ssar({ resourceAttributes: { verb: "update", group: "apps", version: "v1", resource: "deployments", subresource: "scale", name: "web" } }),
    );
    assert.deepEqual(
      { g: z.asked[0]!.apiGroup, v: z.asked[0]!.apiVersion, s: z.asked[0]!.subresource, n: z.asked[0]!.name, ns: z.asked[0]!.namespace },
      { g: "apps", v: "v1", s: "scale", n: "web", ns: "" },
    );
  });

  it("writes allowed false with no reason, and denied for an explicit no", () => {
    const z = new TableAuthorizer();
    assert.deepEqual(selfSubjectAccessReview(alice, z, ssar({ resourceAttributes: { verb: "create", resource: "pods", namespace: "prod" } }))["status"], {
      allowed: false,
    });
    assert.deepEqual(selfSubjectAccessReview(alice, z, ssar({ resourceAttributes: { verb: "get", resource: "secrets" } }))["status"], {
      allowed: false,
      denied: true,
      reason: "secrets are off limits",
    });
  });

  it("takes the zero values a protobuf body carries as empty metadata", () => {
    const out = selfSubjectAccessReview(alice, new TableAuthorizer(), {
      ...ssar({ resourceAttributes: { verb: "create", resource: "pods", namespace: "dev" } }),
      metadata: { generation: 0, name: "" },
    });
    assert.deepEqual(out["status"], { allowed: true, reason: "dev may create pods" });
  });

  it("asks about a non-resource path", () => {
    const z = new TableAuthorizer();
    const out = selfSubjectAccessReview(alice, z, ssar({ nonResourceAttributes: { path: "/healthz", verb: "get" } }));
    assert.deepEqual(out["status"], { allowed: true });
    assert.equal(z.asked[0]!.resourceRequest, false);
    assert.equal(z.asked[0]!.path, "/healthz");
  });

  it("an authorizer that throws is an evaluationError, not allowed", () => {
    const broken: Authorizer = {
      authorize: () => {
        throw new Error("role store unreachable");
      },
    };
    assert.deepEqual(selfSubjectAccessReview(alice, broken, ssar({ resourceAttributes: { verb: "get", resource: "pods" } }))["status"], {
      allowed: false,
      evaluationError: "role store unreachable",
    });
  });

  it("422 when neither or both attribute sets are given, or metadata is set; 400 for a wrong type or kind", () => {
    const z = new TableAuthorizer();
    assert.throws(() => selfSubjectAccessReview(alice, z, ssar({})), status422(["spec.resourceAttributes"]));
    assert.throws(
      () => selfSubjectAccessReview(alice, z, ssar({ resourceAttributes: { verb: "get" }, nonResourceAttributes: { path: "/", verb: "get" } })),
      status422(["spec.nonResourceAttributes"]),
    );
    assert.throws(
      () => selfSubjectAccessReview(alice, z, { ...ssar({ resourceAttributes: { verb: "get" } }), metadata: { name: "x" } }),
      status422(["metadata"]),
    );
    assert.throws(
      () => selfSubjectAccessReview(alice, z, ssar({ resourceAttributes: { verb: 3 } })),
      status400(/spec.resourceAttributes.verb: expected a string/),
    );
    assert.throws(() => selfSubjectAccessReview(alice, z, { ...ssar({}), kind: "SubjectAccessReview" }), status400(/the body is a SubjectAccessReview/));
    assert.equal(z.asked.length, 0);
    assert.throws(
      () => selfSubjectAccessReview(alice, z, ssar({})),
      (err: unknown) =>
        (err as ApiError).status.message ===
        'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified',
    );
  });
});

describe("SubjectAccessReview", () => {
  it("asks about the spec's user, groups, uid and extra", () => {
    const z = new TableAuthorizer();
    const body = {
      kind: "SubjectAccessReview",
      apiVersion: "authorization.k8s.io/v1",
      spec: {
        user: "bob",
        groups: ["ops"],
        uid: "u-bob",
        extra: { scopes: ["a"] },
        resourceAttributes: { namespace: "dev", verb: "create", resource: "pods" },
      },
    };
    const out = subjectAccessReview(z, body);
    assert.deepEqual(z.asked[0]!.user, { name: "bob", groups: ["ops"], uid: "u-bob", extra: { scopes: ["a"] } });
    assert.deepEqual(out["status"], { allowed: true, reason: "dev may create pods" });
  });

  it("a group alone is a subject; a non-resource request is asked as such", () => {
    const z = new TableAuthorizer();
    const out = subjectAccessReview(z, { spec: { groups: ["ops"], nonResourceAttributes: { path: "/healthz", verb: "get" } } });
    assert.deepEqual(out["status"], { allowed: true });
    assert.deepEqual(z.asked[0]!.user, { name: "", groups: ["ops"], uid: "", extra: {} });
  });

  it("422 without user or group, and without attributes (both named)", () => {
    const z = new TableAuthorizer();
    assert.throws(() => subjectAccessReview(z, { spec: {} }), status422(["spec.resourceAttributes", "spec.user"]));
    assert.throws(() => subjectAccessReview(z, { spec: { user: "bob", extra: { k: "v" }, resourceAttributes: {} } }), status400(/spec.extra\[k\]/));
    assert.equal(z.asked.length, 0);
  });
});

describe("LocalSubjectAccessReview", () => {
  const lsar = (spec: Record<string, unknown>, metadata: Record<string, unknown> = {}) => ({ kind: "LocalSubjectAccessReview", metadata, spec });

  it("is held to the path's namespace and takes it as metadata.namespace", () => {
    const z = new TableAuthorizer();
    const out = localSubjectAccessReview(z, "dev", lsar({ user: "bob", resourceAttributes: { namespace: "dev", verb: "create", resource: "pods" } }));
    assert.deepEqual(out["metadata"], { namespace: "dev" });
    assert.deepEqual(out["status"], { allowed: true, reason: "dev may create pods" });
  });

  it("422 when spec.resourceAttributes.namespace is not the path's, or for non-resource attributes; 400 for another metadata.namespace", () => {
    const z = new TableAuthorizer();
    assert.throws(
      () => localSubjectAccessReview(z, "dev", lsar({ user: "bob", resourceAttributes: { namespace: "prod", verb: "create", resource: "pods" } })),
      status422(["spec.resourceAttributes.namespace"]),
    );
    assert.throws(
      () => localSubjectAccessReview(z, "dev", lsar({ user: "bob", resourceAttributes: { verb: "create", resource: "pods" } })),
      status422(["spec.resourceAttributes.namespace"]),
    );
    assert.throws(
      () => localSubjectAccessReview(z, "dev", lsar({ user: "bob", nonResourceAttributes: { path: "/healthz", verb: "get" } })),
      status422(["spec.nonResourceAttributes"]),
    );
    assert.throws(
      () => localSubjectAccessReview(z, "dev", lsar({ user: "bob", resourceAttributes: { namespace: "dev" } }, { namespace: "prod" })),
      status400(/does not match the namespace sent on the request/),
    );
    assert.equal(z.asked.length, 0);
  });
});

describe("SelfSubjectRulesReview", () => {
  const rules: RulesOf = {
    resourceRules: [{ verbs: ["get", "list"], apiGroups: [""], resources: ["pods"], resourceNames: [] }],
    nonResourceRules: [{ verbs: ["get"], nonResourceURLs: ["/healthz"] }],
    incomplete: false,
  };

  it("lists the resolver's rules for the caller in spec.namespace (empty lists omitted, as Go's omitempty)", async () => {
    const asked: [string, string][] = [];
    const out = await selfSubjectRulesReview(
      alice,
      {
        rulesFor: (u, ns) => {
          asked.push([u.name, ns]);
          return rules;
        },
      },
      { kind: "SelfSubjectRulesReview", spec: { namespace: "dev" } },
    );
    assert.deepEqual(asked, [["alice", "dev"]]);
    assert.deepEqual(out["status"], {
      resourceRules: [{ verbs: ["get", "list"], apiGroups: [""], resources: ["pods"] }],
      nonResourceRules: [{ verbs: ["get"], nonResourceURLs: ["/healthz"] }],
      incomplete: false,
    });
    assert.deepEqual(out["spec"], {});
  });

  it("system:masters has no rules of its own (the privileged group resolves none); a resolver error is incomplete with its message", async () => {
    const admin: UserInfo = { name: "admin", uid: "", groups: ["system:masters"], extra: {} };
    const out = await selfSubjectRulesReview(
      admin,
      {
        rulesFor: () => {
          throw new Error("role view not found");
        },
      },
      { spec: { namespace: "dev" } },
    );
    assert.deepEqual(out["status"], { resourceRules: [], nonResourceRules: [], incomplete: true, evaluationError: "role view not found" });
  });

  it("400 without a namespace; incomplete without a resolver", async () => {
    await assert.rejects(selfSubjectRulesReview(alice, undefined, { spec: {} }), status400(/no namespace on request/));
    const out = await selfSubjectRulesReview(alice, undefined, { spec: { namespace: "dev" } });
    assert.equal((out["status"] as Record<string, unknown>)["incomplete"], true);
  });
});
