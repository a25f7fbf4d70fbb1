// test-tier: servers
// The finding this closes: `choreo.api.podMetrics` / `nodeMetrics` answered
// any NATS user, token or not. They are now authenticated like every other
// api subject and authorized as Kubernetes authorizes metrics-server's API
// (get|list on pods.metrics.k8s.io / nodes.metrics.k8s.io), with the real
// RBAC authorizer over the bootstrap roles on a real nats-server and Redis.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectBus } from "@choreo/kit/bus";
import { ApiClient } from "@choreo/kit/client";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { openAuditLog, type AuditLog } from "../audit/index.js";
import { Authenticator, AuthorizerChain, parseTokenFile, StaticTokens } from "../auth/index.js";
import { RbacAuthorizer } from "../auth/rbac/authorizer.js";
import { RbacCache } from "../auth/rbac/cache.js";
import { MetricsCollector, MetricsNatsDoor } from "../metrics-api/index.js";
import { refusal } from "../testing/api-assert.js";
import { startStack, type Stack } from "../testing/stack.js";

describe("metrics.k8s.io over NATS: a token and RBAC, as every other api subject", () => {
  let s: Stack;
  let rbac: RbacCache;
  let nc: NatsConnection;
  let dir: string;
  let audit: AuditLog;
  const ac = new AbortController();
  let running: Promise<void>;
  const as = (token?: string): ApiClient => new ApiClient(nc, token ? { token } : {});

  before(async () => {
    s = await startStack();
    dir = mkdtempSync(path.join(tmpdir(), "choreo-metrics-auth-"));
    audit = await openAuditLog({ file: path.join(dir, "audit.log"), log: silentLogger() });
    // vera may read pods' metrics in default (what `view` aggregates from system:aggregate-to-view); bob has no binding.
    await s.client.create(
      fromKubeJson({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        metadata: { name: "metrics-reader", namespace: "default" },
        rules: [{ apiGroups: ["metrics.k8s.io"], resources: ["pods"], verbs: ["get", "list"] }],
      }),
    );
    await s.client.create(
      fromKubeJson({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: "vera-metrics", namespace: "default" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "metrics-reader" },
        subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "vera" }],
      }),
    );
    rbac = new RbacCache({ handlers: s.registry, log: silentLogger() });
    rbac.start();
    await rbac.waitSynced();
    const tokens = new StaticTokens(
      parseTokenFile('admin-token\ncm-token,system:kube-controller-manager,cm,""\nvera-token,vera,v-1,""\nbob-token,bob,b-1,""\n'),
    );
    const door = new MetricsNatsDoor({
      nc: s.nc,
      collector: new MetricsCollector({ nc: s.nc, handlers: s.registry, log: silentLogger() }),
      log: silentLogger(),
      authentication: new Authenticator({ tokens: [tokens] }),
      authorizer: new AuthorizerChain([new RbacAuthorizer(rbac)]),
      audit,
    });
    running = door.start(ac.signal);
    nc = await connectBus(s.nats.url, "metrics-auth-test");
    // The door is subscribed once an admin's request is answered.
    await as("admin-token").nodeMetrics();
  });
  after(async () => {
    ac.abort();
    await running;
    await nc?.close();
    await rbac?.stop();
    await s?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a request without a token, or with an unknown one, 401", async () => {
    assert.equal((await refusal(as().podMetrics("default"))).code, 401);
    assert.equal((await refusal(as().nodeMetrics())).code, 401);
    assert.equal((await refusal(as("guess").podMetrics("default"))).code, 401);
  });

  it("refuses a token without the right 403, with the apiserver's message", async () => {
    const bob = await refusal(as("bob-token").podMetrics("default"));
    assert.equal(bob.code, 403);
    assert.equal(
      bob.message,
      'pods.metrics.k8s.io is forbidden: User "bob" cannot list resource "pods" in API group "metrics.k8s.io" in the namespace "default"',
    );
    const named = await refusal(as("bob-token").podMetrics("default", { name: "web" }));
    assert.equal(named.code, 403);
    assert.match(named.message, /User "bob" cannot get resource "pods" in API group "metrics.k8s.io"/);
    // view in default is not view in kube-system, nor across namespaces, nor of nodes.
    assert.equal((await refusal(as("vera-token").podMetrics("kube-system"))).code, 403);
    assert.equal((await refusal(as("vera-token").podMetrics(""))).code, 403);
    const nodes = await refusal(as("vera-token").nodeMetrics());
    assert.equal(nodes.code, 403);
    assert.match(nodes.message, /cannot list resource "nodes" in API group "metrics.k8s.io" at the cluster scope/);
    // The controller manager (the HPA controller) reads pods' metrics, not nodes'.
    assert.equal((await refusal(as("cm-token").nodeMetrics())).code, 403);
  });

  it("answers a token with the right", async () => {
    assert.deepEqual((await as("vera-token").podMetrics("default")).items, []);
    assert.deepEqual((await as("cm-token").podMetrics("")).items, []);
    assert.deepEqual((await as("admin-token").nodeMetrics()).items, []);
    // A named pod with no metrics is metrics-server's 404, once allowed.
    assert.equal((await refusal(as("vera-token").podMetrics("default", { name: "web" }))).code, 404);
  });

  it("audits each authenticated request with its decision", async () => {
    await refusal(as("bob-token").nodeMetrics());
    await as("admin-token").nodeMetrics();
    await audit.close();
    const events = readFileSync(path.join(dir, "audit.log"), "utf8")
      .trim()
      .split("\n")
      .map(
        (l) =>
          JSON.parse(l) as {
            user: { username: string };
            verb: string;
            requestURI: string;
            responseStatus: { code: number };
            objectRef?: { apiGroup?: string };
          },
      );
    const metrics = events
      .filter((e) => e.requestURI === "nats:choreo.api.nodeMetrics")
      .map((e) => [e.user.username, e.verb, e.responseStatus.code, e.objectRef?.apiGroup]);
    assert.deepEqual(metrics.slice(-2), [
      ["bob", "list", 403, "metrics.k8s.io"],
      ["admin", "list", 200, "metrics.k8s.io"],
    ]);
  });
});
