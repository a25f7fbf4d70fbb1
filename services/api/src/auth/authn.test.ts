// Authentication and the authorization hook of the HTTP gateway, against a
// real https listener: tokens from a Kubernetes token file, client
// certificates of the cluster's client CA, impersonation, and the 401/403
// Status bodies kubectl shows.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { ensureClientCa, signClientCert } from "@choreo/kit/secrets";
import { createGateway, type Gateway } from "../http/gateway.js";
import { call, pod } from "../http/testing/harness.js";
import { MemoryHandlers } from "../http/testing/memory-handlers.js";
import { ensureServingCert, type ServingCert } from "../http/tls.js";
import { Authenticator } from "./authenticate.js";
import { AuthorizerChain, forbiddenError } from "./authorize.js";
import { methodAttributes, resourceAttributes } from "./attributes.js";
import { csvFields, parseTokenFile, StaticTokens } from "./static-tokens.js";
import type { Attributes, Authorizer } from "./types.js";

/** A table of what is allowed: `verb resource namespace` per group or user; everything else has no opinion. */
function tableAuthorizer(rules: { who: string; verb: string; resource: string; namespace?: string; name?: string }[]): Authorizer & { seen: Attributes[] } {
  const seen: Attributes[] = [];
  return {
    seen,
    authorize(a) {
      seen.push(a);
      const ok = rules.some(
        (r) =>
          (r.who === a.user.name || a.user.groups.includes(r.who)) &&
          (r.verb === "*" || r.verb === a.verb) &&
          (r.resource === (a.subresource ? `${a.resource}/${a.subresource}` : a.resource) || (!a.resourceRequest && r.resource === a.path)) &&
          (r.namespace === undefined || r.namespace === a.namespace) &&
          (r.name === undefined || r.name === a.name),
      );
      return { allowed: ok, reason: "" };
    },
  };
}

describe("token file", () => {
  it("reads Kubernetes' token,user,uid,\"groups\" lines and choreo's bare admin tokens", () => {
    const entries = parseTokenFile('# users\nt1,alice,u-1,"dev,ops"\n\nt2,bob,,viewers\nbare-admin\nt3,carol,c\n');
    assert.deepEqual(
      entries.map((e) => [e.token, e.user.name, e.user.uid, e.user.groups]),
      [
        ["t1", "alice", "u-1", ["dev", "ops", "system:authenticated"]],
        ["t2", "bob", "bob", ["viewers", "system:authenticated"]],
        ["bare-admin", "admin", "admin", ["system:masters", "system:authenticated"]],
        ["t3", "carol", "c", ["system:authenticated"]],
      ],
    );
    assert.deepEqual(csvFields('a,"b,""c""",d'), ["a", 'b,"c"', "d"]);
    assert.throws(() => parseTokenFile("t1,alice\nt1,bob\n", "f"), /f:2: a token appears twice/);
    assert.throws(() => parseTokenFile(",alice\n", "f"), /f:1: .*token and user are required/);
    const tokens = new StaticTokens(entries);
    assert.equal(tokens.authenticateToken("t2")?.name, "bob");
    assert.equal(tokens.authenticateToken("t2x"), undefined);
  });

  it("maps api methods to the verbs and subresources Kubernetes authorizes", () => {
    const u = { name: "u", uid: "", groups: [], extra: {} };
    const a = (m: Parameters<typeof methodAttributes>[1], req: unknown) => {
      const x = methodAttributes(u, m, req);
      return `${x.verb} ${x.apiGroup}/${x.resource}${x.subresource ? `/${x.subresource}` : ""} ${x.namespace}/${x.name}`;
    };
    assert.equal(a("list", { resource: "deployments", namespace: "dev" }), "list apps/deployments dev/");
    assert.equal(a("bind", { namespace: "dev", name: "p" }), "create /pods/binding dev/p");
    assert.equal(a("evict", { namespace: "dev", name: "p" }), "create /pods/eviction dev/p");
    assert.equal(a("updateScale", { resource: "deployments", namespace: "dev", name: "d" }), "update apps/deployments/scale dev/d");
    assert.equal(a("deleteCollection", { resource: "pods", namespace: "" }), "deletecollection /pods /");
    assert.equal(a("watch", { resource: "nodes", namespace: "" }), "watch /nodes /");
  });

  it("words a 403 as the apiserver", () => {
    const u = { name: "alice", uid: "", groups: [], extra: {} };
    const msg = (a: Attributes) => forbiddenError(a, "").status.message;
    assert.equal(
      msg(resourceAttributes(u, "get", { group: "apps", version: "v1", resource: "deployments" }, "prod", "web")),
      'deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments" in API group "apps" in the namespace "prod"',
    );
    assert.equal(
      msg(resourceAttributes(u, "list", { group: "", version: "v1", resource: "nodes" }, "", "")),
      'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope',
    );
    assert.equal(
      msg(resourceAttributes(u, "create", { group: "", version: "v1", resource: "pods" }, "dev", "p", "exec")),
      'pods "p" is forbidden: User "alice" cannot create resource "pods/exec" in API group "" in the namespace "dev"',
    );
  });
});

describe("the gateway's doors: tokens, client certificates, impersonation", () => {
  let dir: string;
  let serving: ServingCert;
  let gateway: Gateway;
  let base: string;
  let alice: { cert: string; key: string };
  let stranger: { cert: string; key: string };
  const authz = tableAuthorizer([
    { who: "dev", verb: "*", resource: "pods", namespace: "dev" },
    { who: "bob", verb: "list", resource: "pods", namespace: "dev" },
    { who: "system:authenticated", verb: "get", resource: "/api" },
    { who: "alice", verb: "impersonate", resource: "users", name: "bob" },
  ]);

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "choreo-authn-"));
    serving = await ensureServingCert(dir);
    const ca = await ensureClientCa(path.join(dir, "pki"));
    alice = await signClientCert(path.join(dir, "pki"), "alice", ["dev"]);
    // A certificate of another CA with the same subject: must not authenticate.
    await ensureClientCa(path.join(dir, "other"));
    stranger = await signClientCert(path.join(dir, "other"), "alice", ["system:masters"]);
    const tokens = new StaticTokens(parseTokenFile("admin-token\nbob-token,bob,b-1,viewers\n"));
    gateway = createGateway({
      handlers: new MemoryHandlers(),
      log: silentLogger(),
      authentication: new Authenticator({ tokens: [tokens], clientCerts: true }),
      authorizer: new AuthorizerChain([authz]),
    });
    const ports = await gateway.listen({ host: "127.0.0.1", httpsPort: 0, tls: { cert: serving.cert, key: serving.key, clientCa: ca.pem } });
    base = `https://127.0.0.1:${ports.httpsPort}`;
  });
  after(async () => {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const get = (p: string, o: Parameters<typeof call>[3] = {}) => call(base, "GET", p, { ca: serving.caPem, ...o });

  it("knows a client certificate's user (CN) and groups (O), and refuses what no rule allows with Kubernetes' 403", async () => {
    const mine = await get("/api/v1/namespaces/dev/pods", alice);
    assert.equal(mine.status, 200, mine.text);
    assert.deepEqual(authz.seen.at(-1)?.user.groups, ["dev", "system:authenticated"]);
    const created = await call(base, "POST", "/api/v1/namespaces/dev/pods", { ca: serving.caPem, ...alice, body: pod("a") });
    assert.equal(created.status, 201, created.text);
    const theirs = await get("/api/v1/namespaces/prod/pods", alice);
    assert.equal(theirs.status, 403);
    assert.equal(theirs.json["reason"], "Forbidden");
    assert.equal(theirs.json["message"], 'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "prod"');
    assert.deepEqual(theirs.json["details"], { kind: "pods" });
    const secret = await get("/api/v1/namespaces/dev/secrets/s", alice);
    assert.equal(secret.status, 403);
    const exec = await call(base, "POST", "/api/v1/namespaces/prod/pods/a/exec?command=sh", { ca: serving.caPem, ...alice });
    assert.equal(exec.status, 403, "a stream subresource is authorized as create pods/exec");
  });

  it("ignores a certificate another CA signed (401 without a token), and refuses anonymous requests but health and version", async () => {
    assert.equal((await get("/api/v1/namespaces/dev/pods", stranger)).status, 401);
    assert.equal((await get("/api/v1/namespaces/dev/pods")).status, 401);
    assert.equal((await get("/api")).status, 401);
    assert.equal((await get("/healthz")).status, 200);
    assert.equal((await get("/version")).status, 200);
    assert.equal((await get("/healthz", { token: "wrong" })).status, 401, "a wrong token is refused even where anonymous would do");
  });

  it("takes tokens of the token file: the bare admin may do anything, bob what his rules say", async () => {
    assert.equal((await get("/api/v1/nodes", { token: "admin-token" })).status, 200);
    assert.equal((await get("/api/v1/namespaces/dev/pods", { token: "bob-token" })).status, 200);
    const r = await get("/api/v1/namespaces/dev/pods/a", { token: "bob-token" });
    assert.equal(r.status, 403);
    assert.equal(r.json["message"], 'pods "a" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "dev"');
    assert.equal((await get("/api", { token: "bob-token" })).status, 200, "discovery: a non-resource rule");
    assert.equal((await get("/apis", { token: "bob-token" })).status, 403);
  });

  it("impersonates only where `impersonate` is allowed, and then acts with the impersonated user's rights", async () => {
    const asBob = await get("/api/v1/namespaces/dev/pods", { ...alice, headers: { "Impersonate-User": "bob" } });
    assert.equal(asBob.status, 200, asBob.text);
    assert.equal(authz.seen.at(-1)?.user.name, "bob");
    const bobCannot = await get("/api/v1/namespaces/dev/pods/a", { ...alice, headers: { "Impersonate-User": "bob" } });
    assert.equal(bobCannot.status, 403);
    assert.match(String(bobCannot.json["message"]), /User "bob" cannot get/);
    const carol = await get("/api/v1/namespaces/dev/pods", { ...alice, headers: { "Impersonate-User": "carol" } });
    assert.equal(carol.status, 403);
    assert.equal(carol.json["message"], 'users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope');
    const group = await get("/api/v1/namespaces/dev/pods", { ...alice, headers: { "Impersonate-User": "bob", "Impersonate-Group": "system:masters" } });
    assert.equal(group.status, 403, "each group is checked too");
    const noUser = await get("/api/v1/namespaces/dev/pods", { ...alice, headers: { "Impersonate-Group": "dev" } });
    assert.equal(noUser.status, 400);
    const admin = await get("/api/v1/namespaces/dev/pods/a", { token: "admin-token", headers: { "Impersonate-User": "bob" } });
    assert.equal(admin.status, 403, "the administrator impersonating bob has bob's rights");
  });
});
