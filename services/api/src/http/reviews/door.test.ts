// The review door over HTTP (a loopback server calling serveReviews as the
// gateway does): JSON, YAML and protobuf bodies, protobuf answers, 201, the
// discovery documents of both groups, and 404/405/400/422 Statuses.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { decodeObject, encodeObject, PROTOBUF } from "@choreo/kit/kube-proto";
import type { Attributes, Authorizer, UserInfo } from "../../auth/types.js";
import { apiGroupList, aggregatedDiscovery } from "../discovery.js";
import { requestAttributes } from "../request-attributes.js";
import { sendError } from "../respond.js";
import { call } from "../testing/harness.js";
import { isReviewPath, reviewAttributes, serveReviews } from "./door.js";

const alice: UserInfo = { name: "alice", uid: "", groups: ["system:authenticated"], extra: {} };
const allowPodsInDev: Authorizer = {
  authorize: (a: Attributes) => ({ allowed: a.resource === "pods" && a.namespace === "dev", reason: "" }),
};

describe("the review door", () => {
  let server: http.Server;
  let base: string;

  before(async () => {
    server = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://door");
      serveReviews(req, res, url, {
        user: alice,
        authorizer: allowPodsInDev,
        tokens: { authenticateToken: (t) => (t === "good" ? alice : undefined) },
        apiAudiences: ["api"],
      }).catch((err: unknown) => sendError(res, err));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  const ssar = (namespace: string) => ({
    apiVersion: "authorization.k8s.io/v1",
    kind: "SelfSubjectAccessReview",
    spec: { resourceAttributes: { namespace, verb: "create", resource: "pods" } },
  });

  it("answers a JSON SelfSubjectAccessReview with 201 and its status", async () => {
    const r = await call(base, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", { body: ssar("dev") });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(r.json["status"], { allowed: true });
    const no = await call(base, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", { body: ssar("prod") });
    assert.deepEqual(no.json["status"], { allowed: false });
    assert.deepEqual(no.json["metadata"], { creationTimestamp: null });
  });

  it("drops fields the kind does not have, so a JSON review can be answered in protobuf", async () => {
    const r = await call(base, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
      body: JSON.stringify({ ...ssar("dev"), extra: 1 }),
      headers: { "Content-Type": "application/json", Accept: PROTOBUF },
    });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.headers["content-type"], PROTOBUF);
  });

  it("reads YAML", async () => {
    const yaml =
      "apiVersion: authorization.k8s.io/v1\nkind: SelfSubjectAccessReview\nspec:\n  resourceAttributes: {namespace: dev, verb: create, resource: pods}\n";
    const r = await call(base, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
      body: yaml,
      headers: { "Content-Type": "application/yaml" },
    });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(r.json["status"], { allowed: true });
  });

  it("reads and answers protobuf, as kubectl 1.32 sends it", async () => {
    const body = Buffer.from(encodeObject(ssar("dev")));
    const r = await new Promise<{ status: number; type: string; bytes: Buffer }>((resolve, reject) => {
      const req = http.request(
        `${base}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`,
        { method: "POST", headers: { "Content-Type": PROTOBUF, Accept: `${PROTOBUF}, application/json`, "Content-Length": body.length } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, type: String(res.headers["content-type"]), bytes: Buffer.concat(chunks) }));
        },
      );
      req.on("error", reject);
      req.end(body);
    });
    assert.equal(r.status, 201);
    assert.equal(r.type, PROTOBUF);
    const out = decodeObject(r.bytes);
    assert.equal(out["kind"], "SelfSubjectAccessReview");
    assert.deepEqual(out["status"], { allowed: true });
  });

  it("serves the other reviews at their paths", async () => {
    const lsar = await call(base, "POST", "/apis/authorization.k8s.io/v1/namespaces/dev/localsubjectaccessreviews", {
      body: { spec: { user: "bob", resourceAttributes: { namespace: "dev", verb: "get", resource: "pods" } } },
    });
    assert.equal(lsar.status, 201, lsar.text);
    assert.deepEqual(lsar.json["metadata"], { namespace: "dev", creationTimestamp: null }, "Go's zero time, as the apiserver writes it");
    const ssr = await call(base, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", { body: { kind: "SelfSubjectReview" } });
    assert.deepEqual(ssr.json["status"], { userInfo: { username: "alice", groups: ["system:authenticated"] } });
    const tr = await call(base, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", { body: { spec: { token: "good" } } });
    assert.deepEqual(tr.json["metadata"], { creationTimestamp: null });
    assert.deepEqual(tr.json["status"], { authenticated: true, user: { username: "alice", groups: ["system:authenticated"] }, audiences: ["api"] });
    const rules = await call(base, "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", { body: { spec: { namespace: "dev" } } });
    assert.equal(rules.status, 201);
    assert.equal((rules.json["status"] as Record<string, unknown>)["incomplete"], true);
  });

  it("refuses with Kubernetes' Statuses", async () => {
    const cases: [string, string, unknown, number, string][] = [
      ["GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", undefined, 405, "MethodNotAllowed"],
      ["POST", "/apis/authorization.k8s.io/v1/localsubjectaccessreviews", {}, 404, "NotFound"],
      ["POST", "/apis/authorization.k8s.io/v1/namespaces/dev/selfsubjectaccessreviews", {}, 404, "NotFound"],
      ["POST", "/apis/authorization.k8s.io/v2/selfsubjectaccessreviews", {}, 404, "NotFound"],
      ["POST", "/apis/authentication.k8s.io/v1/tokenrequests", {}, 404, "NotFound"],
      ["POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", { spec: {} }, 422, "Invalid"],
      ["POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", { spec: { resourceAttributes: {} } }, 422, "Invalid"],
      ["POST", "/apis/authentication.k8s.io/v1/tokenreviews", { spec: {} }, 400, "BadRequest"],
      ["POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "{not json", 400, "BadRequest"],
      ["DELETE", "/apis/authorization.k8s.io/v1", undefined, 405, "MethodNotAllowed"],
    ];
    for (const [method, path, body, code, reason] of cases) {
      const r = await call(base, method, path, body === undefined ? {} : { body: body as object, headers: { "Content-Type": "application/json" } });
      assert.equal(r.status, code, `${method} ${path}: ${r.text}`);
      assert.equal(r.json["kind"], "Status");
      assert.equal(r.json["reason"], reason, `${method} ${path}`);
    }
  });

  it("answers hostile bodies with a 4xx, never a 5xx", async () => {
    const paths = [
      "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
      "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      "/apis/authorization.k8s.io/v1/namespaces/dev/localsubjectaccessreviews",
      "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
      "/apis/authentication.k8s.io/v1/selfsubjectreviews",
      "/apis/authentication.k8s.io/v1/tokenreviews",
    ];
    const bodies = [
      "[]",
      "null",
      "1",
      '"s"',
      '{"spec":[]}',
      '{"spec":{"resourceAttributes":[]}}',
      '{"spec":{"user":"u","extra":[],"resourceAttributes":{}}}',
      '{"spec":{"user":"u","extra":{"k":[1]},"resourceAttributes":{}}}',
      '{"metadata":[],"spec":{"namespace":{}}}',
      '{"kind":7,"apiVersion":[]}',
      '{"spec":{"token":1,"audiences":"x"}}',
      '{"spec":{"groups":"g","nonResourceAttributes":{"path":[]}}}',
    ];
    for (const path of paths)
      for (const body of bodies) {
        const r = await call(base, "POST", path, { body, headers: { "Content-Type": "application/json", Accept: PROTOBUF } });
        assert.ok(r.status < 500, `${path} ${body}: ${r.status} ${r.text}`);
      }
  });

  it("serves both groups' discovery, and they are listed in /apis (legacy and aggregated)", async () => {
    const list = await call(base, "GET", "/apis/authorization.k8s.io/v1");
    assert.equal(list.json["kind"], "APIResourceList");
    assert.deepEqual(
      (list.json["resources"] as { name: string; verbs: string[]; namespaced: boolean }[]).map((r) => [r.name, r.namespaced, r.verbs.join()]),
      [
        ["localsubjectaccessreviews", true, "create"],
        ["selfsubjectaccessreviews", false, "create"],
        ["selfsubjectrulesreviews", false, "create"],
        ["subjectaccessreviews", false, "create"],
      ],
    );
    const group = await call(base, "GET", "/apis/authentication.k8s.io");
    assert.deepEqual(group.json["preferredVersion"], { groupVersion: "authentication.k8s.io/v1", version: "v1" });
    const names = (apiGroupList()["groups"] as { name: string }[]).map((g) => g.name);
    assert.ok(names.includes("authorization.k8s.io") && names.includes("authentication.k8s.io"), names.join());
    const aggregated = (aggregatedDiscovery("apis", "v2")["items"] as { metadata: { name: string }; versions: { resources: { resource: string }[] }[] }[]).find(
      (g) => g.metadata.name === "authentication.k8s.io",
    );
    assert.deepEqual(
      aggregated?.versions[0]?.resources.map((r) => r.resource),
      ["selfsubjectreviews", "tokenreviews"],
    );
  });

  it("names the attributes the gateway must authorize", () => {
    assert.ok(isReviewPath("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"));
    assert.ok(!isReviewPath("/apis/authorization.k8s.iox/v1"));
    assert.deepEqual(reviewAttributes(alice, "POST", "/apis/authorization.k8s.io/v1/namespaces/dev/localsubjectaccessreviews"), {
      user: alice,
      verb: "create",
      resourceRequest: true,
      apiGroup: "authorization.k8s.io",
      apiVersion: "v1",
      resource: "localsubjectaccessreviews",
      subresource: "",
      namespace: "dev",
      name: "",
      path: "",
    });
    assert.equal(reviewAttributes(alice, "GET", "/apis/authentication.k8s.io/v1")?.resourceRequest, false);
    assert.equal(reviewAttributes(alice, "POST", "/apis/authentication.k8s.io/v1/nothing"), undefined);
    // The gateway's own attributes of a request go through the same.
    const asked = requestAttributes(alice, "POST", new URL("http://x/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"));
    assert.deepEqual(
      [asked?.verb, asked?.apiGroup, asked?.resource, asked?.resourceRequest],
      ["create", "authorization.k8s.io", "selfsubjectaccessreviews", true],
    );
  });
});
