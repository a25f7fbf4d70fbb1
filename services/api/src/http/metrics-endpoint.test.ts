// The api's own /metrics on the gateway: a non-resource URL RBAC decides
// (system:monitoring grants it, as kube-apiserver's bootstrap policy), the
// registry's text with request latency by verb, resource and code; /livez
// with named checks.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { createRegistry } from "@choreo/kit/metrics";
import { Authenticator } from "../auth/authenticate.js";
import { AuthorizerChain } from "../auth/authorize.js";
import { RbacAuthorizer } from "../auth/rbac/index.js";
import { StaticSource } from "../auth/rbac/testing.js";
import { parseTokenFile, StaticTokens } from "../auth/static-tokens.js";
import { apiLiveness } from "../health/livez.js";
import { bootstrapClusterRoleBindings, bootstrapClusterRoles } from "../registry/rbac/bootstrap-policy.js";
import { createGateway, type Gateway } from "./gateway.js";
import { call, pod } from "./testing/harness.js";
import { MemoryHandlers } from "./testing/memory-handlers.js";

describe("GET /metrics and /livez on the gateway", () => {
  let gateway: Gateway;
  let base = "";
  before(async () => {
    const tokens = new StaticTokens(parseTokenFile("admin-token\nprom-token,prometheus,p-1,system:monitoring\nbob-token,bob,b-1,viewers\n"));
    const rbac = new RbacAuthorizer(new StaticSource([], bootstrapClusterRoles(), [], bootstrapClusterRoleBindings()));
    gateway = createGateway({
      handlers: new MemoryHandlers(),
      log: silentLogger(),
      authentication: new Authenticator({ tokens: [tokens] }),
      authorizer: new AuthorizerChain([rbac]),
      registry: createRegistry("api"),
      liveness: apiLiveness(),
    });
    base = `http://127.0.0.1:${(await gateway.listen({ host: "127.0.0.1", httpPort: 0 })).httpPort}`;
  });
  after(() => gateway.close());

  it("serves the registry to system:monitoring with requests by verb, resource and code; 403 to others, 401 without credentials", async () => {
    assert.equal((await call(base, "POST", "/api/v1/namespaces/default/pods", { token: "admin-token", body: pod("web") })).status, 201);
    assert.equal((await call(base, "GET", "/api/v1/namespaces/default/pods/nope", { token: "admin-token" })).status, 404);
    const m = await call(base, "GET", "/metrics", { token: "prom-token" });
    assert.equal(m.status, 200, m.text);
    assert.match(String(m.headers["content-type"]), /^text\/plain; version=0\.0\.4/);
    assert.match(m.text, /choreo_api_http_request_duration_seconds_bucket\{le="[0-9.]+",service="api",verb="create",resource="pods",code="201"\} 1/);
    assert.match(m.text, /choreo_api_http_request_duration_seconds_count\{service="api",verb="get",resource="pods",code="404"\} 1/);
    assert.match(m.text, /process_cpu_user_seconds_total/);
    const bob = await call(base, "GET", "/metrics", { token: "bob-token" });
    assert.equal(bob.status, 403);
    assert.match(bob.text, /cannot get path \\"\/metrics\\"|forbidden/i);
    assert.equal((await call(base, "GET", "/metrics", { token: "wrong" })).status, 401);
    // The forbidden scrape is itself counted (a non-resource request: verb get, no resource).
    assert.match((await call(base, "GET", "/metrics", { token: "admin-token" })).text, /_count\{service="api",verb="get",resource="",code="403"\} 1/);
  });

  it("/livez names its checks with ?verbose and needs no credentials", async () => {
    const plain = await call(base, "GET", "/livez");
    assert.equal(plain.status, 200);
    assert.equal(plain.text, "ok");
    const verbose = await call(base, "GET", "/livez?verbose");
    assert.equal(verbose.text, "[+]ping ok\n[+]event-loop ok\nlivez check passed\n");
  });
});
