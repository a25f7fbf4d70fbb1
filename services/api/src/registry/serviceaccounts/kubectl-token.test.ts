// test-tier: servers
// Real kubectl 1.32 `create token` against the gateway (protobuf TokenRequest
// on serviceaccounts/NAME/token): the token it prints is the ServiceAccount
// (`auth whoami`), bound to a pod when asked; RBAC decides `create
// serviceaccounts/token`; a short --duration is the apiserver's 422 and a
// missing account its 404.
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { Authenticator } from "../../auth/authenticate.js";
import { AuthorizerChain } from "../../auth/authorize.js";
import { serviceAccountBindingCheck } from "../../auth/binding-check.js";
import { RbacAuthorizer } from "../../auth/rbac/authorizer.js";
import { clusterRole, clusterRoleBinding, groupSubject, policyRule, role, roleBinding, StaticSource, userSubject } from "../../auth/rbac/testing.js";
import { ServiceAccountAuthenticator, ServiceAccountTokens } from "../../auth/service-account-tokens.js";
import { StaticTokens } from "../../auth/static-tokens.js";
import { createGateway, type Gateway } from "../../http/gateway.js";
import { kubectlInstalled, kubectlRunner, writeKubeconfig } from "../../http/testing/kubectl.js";
import { MemoryHandlers } from "../../http/testing/memory-handlers.js";
import { ensureServingCert } from "../../http/tls.js";

const has132 = await kubectlInstalled();

const rbac = new RbacAuthorizer(
  new StaticSource(
    [role("dev", "token-maker", policyRule({ verbs: ["create"], apiGroups: [""], resources: ["serviceaccounts/token"] }))],
    [
      clusterRole("discovery", policyRule({ verbs: ["get"], nonResourceUrls: ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version"] })),
      clusterRole("basic-user", policyRule({ verbs: ["create"], apiGroups: ["authentication.k8s.io"], resources: ["selfsubjectreviews"] })),
      clusterRole("admin", policyRule({ verbs: ["*"], apiGroups: ["*"], resources: ["*"] })),
    ],
    [roleBinding("dev", "alice-tokens", "Role", "token-maker", userSubject("alice"))],
    [
      ...["discovery", "basic-user"].map((r) => clusterRoleBinding(r, r, groupSubject("system:authenticated"))),
      clusterRoleBinding("admins", "admin", userSubject("admin")),
    ],
  ),
);

describe("kubectl create token", { skip: has132 ? false : "kubectl not on PATH" }, () => {
  let dir: string;
  let gateway: Gateway;
  let server: string;
  let caPem: string;
  const tokens = new ServiceAccountTokens({ key: generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey });
  let podUid = "";

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "choreo-sa-token-"));
    const cert = await ensureServingCert(dir, []);
    caPem = cert.caPem;
    const handlers = new MemoryHandlers();
    for (const ns of ["default", "dev", "prod"]) handlers.seed({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
    for (const ns of ["dev", "prod"]) handlers.seed({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "robot", namespace: ns } });
    const pod = handlers.seed({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", namespace: "dev" },
      spec: { serviceAccountName: "robot", containers: [{ name: "c", image: "busybox" }] },
    });
    podUid = pod.kind?.value.metadata?.uid ?? "";
    const users = [
      { token: "alice-token", user: { name: "alice", uid: "", groups: ["system:authenticated"], extra: {} } },
      { token: "admin-token", user: { name: "admin", uid: "", groups: ["system:authenticated"], extra: {} } },
    ];
    gateway = createGateway({
      handlers,
      log: silentLogger(),
      authentication: new Authenticator({
        tokens: [new StaticTokens(users), new ServiceAccountAuthenticator(tokens, serviceAccountBindingCheck(handlers), 0)],
      }),
      authorizer: new AuthorizerChain([rbac]),
      tokenIssuer: tokens,
    });
    const { httpsPort } = await gateway.listen({ host: "127.0.0.1", httpsPort: 0, tls: cert });
    server = `https://127.0.0.1:${httpsPort}`;
  });
  after(async () => {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const as = (token: string) => {
    const d = path.join(dir, token.slice(0, 12).replace(/[^a-z0-9-]/gi, "x") + String(token.length));
    mkdirSync(d, { recursive: true });
    return kubectlRunner(d, writeKubeconfig(d, { server, caPem, token }), { requestTimeoutSeconds: 20 });
  };

  it("prints a token that is the ServiceAccount, for the asked audience and duration, bound to a pod when asked", async () => {
    const alice = as("alice-token");
    const r = await alice("create", "token", "robot", "-n", "dev");
    assert.equal(r.code, 0, r.stderr);
    const token = r.stdout.trim();
    const claims = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")) as {
      sub: string;
      aud: string[];
      exp: number;
      iat: number;
      "kubernetes.io": { pod?: { name: string; uid: string } };
    };
    assert.equal(claims.sub, "system:serviceaccount:dev:robot");
    assert.deepEqual(claims.aud, tokens.apiAudiences);
    assert.equal(claims.exp - claims.iat, 3600);
    const who = await as(token)("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}");
    assert.equal(who.code, 0, who.stderr);
    assert.equal(who.stdout.trim(), "system:serviceaccount:dev:robot");

    const bound = await alice(
      "create",
      "token",
      "robot",
      "-n",
      "dev",
      "--audience",
      "vault",
      "--duration",
      "2h",
      "--bound-object-kind",
      "Pod",
      "--bound-object-name",
      "p",
    );
    assert.equal(bound.code, 0, bound.stderr);
    const c2 = JSON.parse(Buffer.from(bound.stdout.trim().split(".")[1] ?? "", "base64url").toString("utf8")) as typeof claims;
    assert.deepEqual(c2.aud, ["vault"]);
    assert.equal(c2.exp - c2.iat, 7200);
    assert.deepEqual(c2["kubernetes.io"].pod, { name: "p", uid: podUid });
    // Another audience than the api's: not a credential here.
    assert.match((await as(bound.stdout.trim())("auth", "whoami")).stderr, /Unauthorized|must be logged in/);
  });

  it("refuses as the apiserver: Forbidden outside the role, 422 under 10 minutes, 404 for a missing account", async () => {
    const alice = as("alice-token");
    const forbidden = await alice("create", "token", "robot", "-n", "prod");
    assert.notEqual(forbidden.code, 0);
    assert.match(
      forbidden.stderr,
      /serviceaccounts "robot" is forbidden: User "alice" cannot create resource "serviceaccounts\/token" in API group "" in the namespace "prod"/,
    );
    const short = await alice("create", "token", "robot", "-n", "dev", "--duration", "5m");
    assert.notEqual(short.code, 0);
    assert.match(short.stderr, /may not specify a duration less than 10 minutes/);
    const missing = await as("admin-token")("create", "token", "ghost", "-n", "dev");
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /serviceaccounts "ghost" not found/);
  });
});
