// test-tier: servers
// Real kubectl 1.32 and 1.20 against the gateway: `kubectl auth can-i`
// (yes/no by namespace, --list), `kubectl auth whoami` (1.32; 1.20 lacks it)
// and a SubjectAccessReview, with users told apart by their bearer tokens
// (static tokens) and every request — the reviews included — decided by the
// RBAC authorizer (auth/rbac) over roles and bindings of this test's own, on
// https as kubectl sends tokens only there.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { Authenticator } from "../../auth/authenticate.js";
import { AuthorizerChain } from "../../auth/authorize.js";
import { RbacAuthorizer } from "../../auth/rbac/authorizer.js";
import { clusterRole, clusterRoleBinding, groupSubject, policyRule, role, roleBinding, StaticSource, userSubject } from "../../auth/rbac/testing.js";
import { StaticTokens } from "../../auth/static-tokens.js";
import type { UserInfo } from "../../auth/types.js";
import { createGateway, type Gateway } from "../gateway.js";
import { kubectlInstalled, kubectlRunner, writeKubeconfig } from "../testing/kubectl.js";
import { MemoryHandlers } from "../testing/memory-handlers.js";
import { ensureServingCert } from "../tls.js";
import { rbacRules } from "./rbac-rules.js";

const KUBECTL_120 = process.env["CHOREO_KUBECTL_120"] ?? "/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl";
const has132 = await kubectlInstalled();
const has120 = existsSync(KUBECTL_120) && (await kubectlInstalled(KUBECTL_120));

const USERS: Record<string, UserInfo> = {
  "alice-token": { name: "alice", uid: "u-alice", groups: ["dev", "system:authenticated"], extra: {} },
  "admin-token": { name: "admin", uid: "", groups: ["system:masters", "system:authenticated"], extra: {} },
  "ops-token": { name: "olga", uid: "", groups: ["ops", "system:authenticated"], extra: {} },
};

// alice: create and get pods in dev (a Role), list deployments anywhere (a ClusterRole); everyone authenticated: GET
// /healthz, discovery and the self reviews (as Kubernetes' system:discovery and system:basic-user); ops: subjectaccessreviews.
const rbac = new RbacAuthorizer(
  new StaticSource(
    [role("dev", "pod-maker", policyRule({ verbs: ["create", "get"], apiGroups: [""], resources: ["pods"] }))],
    [
      clusterRole("deploy-lister", policyRule({ verbs: ["list"], apiGroups: ["apps"], resources: ["deployments"] })),
      clusterRole("healthz", policyRule({ verbs: ["get"], nonResourceUrls: ["/healthz"] })),
      clusterRole("discovery", policyRule({ verbs: ["get"], nonResourceUrls: ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version"] })),
      clusterRole(
        "basic-user",
        policyRule({
          verbs: ["create"],
          apiGroups: ["authorization.k8s.io", "authentication.k8s.io"],
          resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews"],
        }),
      ),
      clusterRole("reviewer", policyRule({ verbs: ["create"], apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"] })),
    ],
    [roleBinding("dev", "alice-pods", "Role", "pod-maker", userSubject("alice"))],
    [
      clusterRoleBinding("alice-deploys", "deploy-lister", userSubject("alice")),
      ...["healthz", "discovery", "basic-user"].map((r) => clusterRoleBinding(r, r, groupSubject("system:authenticated"))),
      clusterRoleBinding("ops-reviews", "reviewer", groupSubject("ops")),
    ],
  ),
);
const authorizer = new AuthorizerChain([rbac]);

describe("kubectl auth against the gateway", { skip: has132 ? false : "kubectl not on PATH" }, () => {
  let dir: string;
  let gateway: Gateway;
  let server_: string;
  let caPem: string;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "choreo-reviews-"));
    const cert = await ensureServingCert(dir, []);
    caPem = cert.caPem;
    const handlers = new MemoryHandlers();
    handlers.seed({ apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } });
    gateway = createGateway({
      handlers,
      log: silentLogger(),
      authentication: new Authenticator({ tokens: [new StaticTokens(Object.entries(USERS).map(([token, user]) => ({ token, user })))] }),
      authorizer,
      reviews: { rules: rbacRules(rbac) },
    });
    const { httpsPort } = await gateway.listen({ host: "127.0.0.1", httpsPort: 0, tls: cert });
    server_ = `https://127.0.0.1:${httpsPort}`;
  });
  after(async () => {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A kubectl (`bin`) as the user of `token`, with its own kubeconfig and cache. */
  const as = (token: string, bin = "kubectl") => {
    const d = path.join(dir, `${path.basename(path.dirname(path.dirname(bin)))}-${token}`);
    mkdirSync(d, { recursive: true });
    return kubectlRunner(d, writeKubeconfig(d, { server: server_, caPem, token }), { bin, requestTimeoutSeconds: 20 });
  };

  for (const [version, bin, present] of [
    ["1.32", "kubectl", has132],
    ["1.20", KUBECTL_120, has120],
  ] as const) {
    it(`kubectl ${version} auth can-i: yes and no by namespace, for the caller`, { skip: present ? false : `kubectl ${version} not found` }, async () => {
      const alice = as("alice-token", bin);
      const yes = await alice("auth", "can-i", "create", "pods", "--namespace", "dev");
      assert.equal(yes.code, 0, yes.stderr);
      assert.equal(yes.stdout.trim(), "yes");
      const no = await alice("auth", "can-i", "create", "pods", "--namespace", "prod");
      assert.equal(no.code, 1, no.stderr);
      assert.equal(no.stdout.trim(), "no");
      // The kubeconfig's namespace is default.
      assert.equal((await alice("auth", "can-i", "create", "pods")).stdout.trim(), "no");
      assert.equal((await alice("auth", "can-i", "list", "deployments.apps", "--all-namespaces")).stdout.trim(), "yes");
      const admin = as("admin-token", bin);
      assert.equal((await admin("auth", "can-i", "create", "pods", "--namespace", "prod")).stdout.trim(), "yes");
      assert.equal((await admin("auth", "can-i", "*", "*")).stdout.trim(), "yes");
    });

    it(`kubectl ${version} auth can-i --list: the caller's rules in the namespace`, { skip: present ? false : `kubectl ${version} not found` }, async () => {
      const r = await as("alice-token", bin)("auth", "can-i", "--list", "--namespace", "dev");
      assert.equal(r.code, 0, r.stderr);
      const rows = r.stdout
        .trim()
        .split("\n")
        .map((l) => l.trim().split(/\s+/));
      assert.deepEqual(rows[0], ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]);
      assert.match(r.stdout, /pods\s+\[\]\s+\[\]\s+\[create get\]/);
      assert.match(r.stdout, /deployments\.apps\s+\[\]\s+\[\]\s+\[list\]/);
      assert.match(r.stdout, /\[\/healthz\]\s+\[\]\s+\[get\]/);
      const other = await as("alice-token", bin)("auth", "can-i", "--list", "--namespace", "prod");
      assert.doesNotMatch(other.stdout, /^pods/m);
    });
  }

  it("kubectl 1.32 auth can-i sends its SelfSubjectAccessReview as protobuf", async () => {
    const r = await as("alice-token")("auth", "can-i", "create", "pods", "--namespace", "dev", "-v=8");
    assert.equal(r.stdout.trim(), "yes");
    assert.match(r.stderr, /POST https:\/\/127\.0\.0\.1:\d+\/apis\/authorization\.k8s\.io\/v1\/selfsubjectaccessreviews/);
    assert.match(r.stderr, /Content-Type: application\/vnd\.kubernetes\.protobuf/);
  });

  it("kubectl 1.32 auth whoami: the caller's name, uid and groups", async () => {
    const r = await as("alice-token")("auth", "whoami");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Username\s+alice/);
    assert.match(r.stdout, /UID\s+u-alice/);
    assert.match(r.stdout, /Groups\s+\[dev system:authenticated\]/);
    const json = JSON.parse((await as("admin-token")("auth", "whoami", "-o", "json")).stdout) as Record<string, Record<string, unknown>>;
    assert.equal(json["kind"], "SelfSubjectReview");
    assert.deepEqual(json["status"], { userInfo: { username: "admin", groups: ["system:masters", "system:authenticated"] } });
  });

  it("a SubjectAccessReview needs create subjectaccessreviews (403 for alice); olga may ask about alice", async () => {
    const file = path.join(dir, "sar.json");
    const sar = {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: { user: "alice", resourceAttributes: { namespace: "dev", verb: "create", resource: "pods" } },
    };
    writeFileSync(file, JSON.stringify(sar));
    const denied = await as("alice-token")("create", "-f", file, "-o", "json");
    assert.notEqual(denied.code, 0);
    assert.match(denied.stderr, /subjectaccessreviews.authorization.k8s.io is forbidden: User "alice" cannot create resource "subjectaccessreviews"/);
    const r = await as("ops-token")("create", "-f", file, "-o", "json");
    assert.equal(r.code, 0, r.stderr);
    const status = (JSON.parse(r.stdout) as Record<string, Record<string, unknown>>)["status"]!;
    assert.equal(status["allowed"], true);
    assert.match(String(status["reason"]), /pod-maker/);
  });
});
