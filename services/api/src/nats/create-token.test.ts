// test-tier: servers
// `choreo.api.createToken` (ApiClient.createToken): the HTTP door's
// TokenRequest over NATS, for node agents writing pods' projected tokens.
// Authenticated and authorized as `create serviceaccounts/token` by the real
// RBAC authorizer over the bootstrap roles (system:node allows it), and a
// node held to Kubernetes' NodeRestriction: only tokens bound to its own pods.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { generateKeyPairSync } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectBus } from "@choreo/kit/bus";
import { ApiClient, type TokenRequestJson } from "@choreo/kit/client";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { Authenticator, AuthorizerChain, parseTokenFile, StaticTokens } from "../auth/index.js";
import { serviceAccountBindingCheck } from "../auth/binding-check.js";
import { RbacAuthorizer } from "../auth/rbac/authorizer.js";
import { RbacCache } from "../auth/rbac/cache.js";
import { ServiceAccountAuthenticator, ServiceAccountTokens } from "../auth/service-account-tokens.js";
import { refusal } from "../testing/api-assert.js";
import { startStack, type Stack } from "../testing/stack.js";
import { TokenNatsDoor } from "./token-door.js";

const uidOf = (o: Parameters<typeof toKubeJson>[0]): string => String((toKubeJson(o)["metadata"] as Record<string, unknown>)["uid"]);

describe("createToken over NATS: a TokenRequest with the HTTP door's checks, a node only for its own pods", () => {
  let s: Stack;
  let rbac: RbacCache;
  let nc: NatsConnection;
  let running: Promise<void>;
  const ac = new AbortController();
  const signer = new ServiceAccountTokens({ key: generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey });
  let authn: ServiceAccountAuthenticator;
  let p1 = "";
  let p2 = "";
  const as = (token?: string): ApiClient => new ApiClient(nc, token ? { token } : {});
  const bound = (name: string, uid: string, extra: Partial<TokenRequestJson["spec"]> = {}): TokenRequestJson => ({
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenRequest",
    spec: { boundObjectRef: { kind: "Pod", apiVersion: "v1", name, uid }, ...extra },
  });

  before(async () => {
    s = await startStack();
    await s.client.create(fromKubeJson({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "robot", namespace: "default" } }));
    const pod = (name: string, node: string) =>
      fromKubeJson({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name, namespace: "default" },
        spec: { nodeName: node, serviceAccountName: "robot", containers: [{ name: "c", image: "busybox" }] },
      });
    p1 = uidOf(await s.client.create(pod("on-node-1", "node-1")));
    p2 = uidOf(await s.client.create(pod("on-node-2", "node-2")));
    rbac = new RbacCache({ handlers: s.registry, log: silentLogger() });
    rbac.start();
    await rbac.waitSynced();
    authn = new ServiceAccountAuthenticator(signer, serviceAccountBindingCheck(s.registry), 0);
    const tokens = new StaticTokens(parseTokenFile('admin-token\nnode1-token,system:node:node-1,n-1,"system:nodes"\nbob-token,bob,b-1,""\n'));
    const door = new TokenNatsDoor({
      nc: s.nc,
      handlers: s.registry,
      issuer: signer,
      log: silentLogger(),
      authentication: new Authenticator({ tokens: [tokens] }),
      authorizer: new AuthorizerChain([new RbacAuthorizer(rbac)]),
    });
    running = door.start(ac.signal);
    nc = await connectBus(s.nats.url, "create-token-test");
    // The door is subscribed once a request is answered.
    await as("admin-token").createToken("default", "robot", { spec: {} });
  });
  after(async () => {
    ac.abort();
    await running;
    await nc?.close();
    await rbac?.stop();
    await s?.stop();
  });

  it("gives an admin a pod-bound token that authenticates as the account with the pod", async () => {
    const out = await as("admin-token").createToken("default", "robot", bound("on-node-1", p1, { expirationSeconds: 3607 }));
    assert.equal(out.kind, "TokenRequest");
    assert.equal(out.spec.expirationSeconds, 3607);
    assert.deepEqual(out.spec.boundObjectRef, { kind: "Pod", apiVersion: "v1", name: "on-node-1", uid: p1 });
    assert.ok(out.status?.token);
    assert.ok(Date.parse(out.status.expirationTimestamp) > Date.now() + 3500_000);
    const user = await authn.authenticateToken(out.status.token);
    assert.equal(user?.name, "system:serviceaccount:default:robot");
    assert.deepEqual(user?.extra["authentication.kubernetes.io/pod-uid"], [p1]);
  });

  it("gives node-1 a token bound to its own pod", async () => {
    const out = await as("node1-token").createToken("default", "robot", bound("on-node-1", p1));
    assert.equal((await authn.authenticateToken(out.status!.token))?.extra["authentication.kubernetes.io/pod-name"]?.[0], "on-node-1");
  });

  it("refuses node-1 a token for another node's pod, an unbound one, one without the pod's uid or with a stale uid: 403", async () => {
    const other = await refusal(as("node1-token").createToken("default", "robot", bound("on-node-2", p2)));
    assert.deepEqual(other, { code: 403, message: 'serviceaccounts "robot" is forbidden: node requested token bound to a pod scheduled on a different node' });
    const unbound = await refusal(as("node1-token").createToken("default", "robot", { spec: {} }));
    assert.deepEqual(unbound, { code: 403, message: 'serviceaccounts "robot" is forbidden: node requested token not bound to a pod' });
    const noUid = await refusal(as("node1-token").createToken("default", "robot", bound("on-node-1", "")));
    assert.deepEqual(noUid, { code: 403, message: 'serviceaccounts "robot" is forbidden: node requested token with a pod binding without a uid' });
    const stale = await refusal(as("node1-token").createToken("default", "robot", bound("on-node-1", "0000")));
    assert.equal(stale.code, 403);
    assert.match(stale.message, /does not match the UID in record/);
  });

  it("refuses without a token (401), without the right (403), and answers the HTTP door's 404 and 422", async () => {
    assert.equal((await refusal(as().createToken("default", "robot", bound("on-node-1", p1)))).code, 401);
    const bob = await refusal(as("bob-token").createToken("default", "robot", bound("on-node-1", p1)));
    assert.equal(bob.code, 403);
    assert.match(bob.message, /User "bob" cannot create resource "serviceaccounts\/token" in API group "" in the namespace "default"/);
    const missing = await refusal(as("admin-token").createToken("default", "nobody", { spec: {} }));
    assert.equal(missing.code, 404);
    const short = await refusal(as("admin-token").createToken("default", "robot", { spec: { expirationSeconds: 10 } }));
    assert.equal(short.code, 422);
    assert.match(short.message, /may not specify a duration less than 10 minutes/);
  });
});
