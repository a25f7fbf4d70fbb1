// test-tier: servers
// The security kinds and doors through the official clients, on a real
// cluster with RBAC on (api + nats-server + redis-server + the replication
// actor, whose aggregation controller fills aggregated ClusterRoles and which
// gives every namespace its default ServiceAccount): (a) the official Python
// client (Debian's python3-kubernetes), whose typed models refuse a missing
// required field, (b) @kubernetes/client-node's typed APIs — Role,
// ClusterRole (aggregationRule), RoleBinding, ClusterRoleBinding and
// ServiceAccount create/read/list/patch/delete, a TokenRequest and its
// TokenReview, the access reviews, a watch of roles — and a user holding
// only view in the namespace (a client certificate from `choreo kubeconfig
// create`) refused with the apiserver's 403 Status.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

const ROOT = path.resolve(import.meta.dirname, "..");
const CHOREO = path.join(ROOT, "services/cli/bin/choreo.js");
const PYTHON = "/usr/bin/python3";
const SCRIPT = path.join(import.meta.dirname, "support", "official_clients_rbac.py");
const WAIT = { timeoutMs: 60_000, intervalMs: 200 };
const GROUP = "rbac.authorization.k8s.io";

function python(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(PYTHON, [SCRIPT, ...args], { timeout: 240_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** A typed model as plain JSON (the client's classes are not deep-equal to literals). */
const plain = (v: unknown): unknown => JSON.parse(JSON.stringify(v)) as unknown;

/** The HTTP status and the Status body of a call the client-node API threw on. */
async function refusal(call: Promise<unknown>): Promise<{ code: number; body: Record<string, unknown> }> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof k8s.ApiException, `an ApiException, not ${String(err)}`);
    const e = err as k8s.ApiException<unknown>;
    const body = typeof e.body === "string" ? (JSON.parse(e.body) as Record<string, unknown>) : (e.body as Record<string, unknown>);
    return { code: e.code, body };
  }
  return assert.fail("the call was accepted");
}

describe("the official clients and the security kinds", () => {
  let c: TestCluster;
  let admin: string;
  let viewer: string;
  const k = (kc: string, ...args: string[]) => run("kubectl", args, kc);

  before(async () => {
    c = await startCluster({ actors: [{ name: "replication", env: { CHOREO_EVENTS: "0" } }] });
    admin = writeKubeconfig(c);
    // choreo kubeconfig create reads the server and CA from DATA_DIR/kubeconfig.
    copyFileSync(admin, path.join(c.dir, "api", "kubeconfig"));
    viewer = path.join(c.dir, "viewer.kubeconfig");
    const made = await run(
      process.execPath,
      [CHOREO, "kubeconfig", "create", "vera", "--group", "viewers", "--data-dir", path.join(c.dir, "api"), "-o", viewer],
      admin,
    );
    assert.equal(made.code, 0, made.stderr);
    for (const ns of ["py", "node"]) {
      assert.equal((await k(admin, "create", "namespace", ns)).code, 0);
      const bound = await k(admin, "create", "rolebinding", "viewers-view", "--clusterrole=view", "--group=viewers", "-n", ns);
      assert.equal(bound.code, 0, bound.stderr);
    }
  });
  after(async () => {
    await c?.stop();
  });

  it("the Python client: RBAC kinds, ServiceAccounts, TokenRequest, the reviews, a watch of roles, a viewer's 403", () =>
    withLogsOnFailure(c, async () => {
      // The viewer's binding is read by the authorizer from a watch: wait until it counts.
      await waitFor(async () => (await k(viewer, "get", "serviceaccounts", "-n", "py")).code === 0, { ...WAIT, message: "vera may list in py" });
      const r = await python(admin, viewer, "py");
      assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`);
      const f = JSON.parse(r.stdout.trim().split("\n").pop() ?? "{}") as Record<string, unknown>;
      assert.equal(f["role.created.kind"], "V1Role");
      assert.deepEqual(f["role.rules"], [{ api_groups: [""], resources: ["pods"], verbs: ["get", "list"], resource_names: null, non_resource_ur_ls: null }]);
      assert.deepEqual(f["role.list"], ["py-anchor", "py-role"]);
      assert.deepEqual(f["role.patched.resources"], ["pods", "pods/log"]);
      assert.deepEqual(f["clusterrole.selector"], { "py.example.com/aggregate": "true" });
      assert.deepEqual(f["clusterrole.nonResourceURLs"], ["/healthz"]);
      assert.deepEqual(f["clusterrole.patched.labels"], { "py.example.com/aggregate": "true", patched: "yes" });
      assert.deepEqual(f["rolebinding.roleRef"], { api_group: GROUP, kind: "Role", name: "py-role" });
      assert.deepEqual(f["rolebinding.subjects"], [
        { api_group: GROUP, kind: "User", name: "py-user", namespace: null },
        { api_group: null, kind: "ServiceAccount", name: "py-sa", namespace: "py" },
      ]);
      assert.deepEqual(f["rolebinding.patched.subjects"], [{ api_group: GROUP, kind: "Group", name: "py-group", namespace: null }]);
      assert.equal(f["clusterrolebinding.roleRef.kind"], "ClusterRole");
      assert.equal(f["rolebinding.roleRef.change"], 422);
      assert.equal(f["rolebinding.roleRef.change.reason"], "Invalid");
      assert.equal(f["sa.automount"], false);
      assert.equal(f["token.kind"], "AuthenticationV1TokenRequest");
      assert.equal(f["token.expirationSeconds"], 600);
      assert.match(String(f["token.expirationTimestamp"]), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
      assert.equal(f["tokenreview.authenticated"], true);
      assert.equal(f["tokenreview.username"], "system:serviceaccount:py:py-sa");
      assert.deepEqual(f["tokenreview.groups"], ["system:serviceaccounts", "system:serviceaccounts:py", "system:authenticated"]);
      assert.equal(f["tokenreview.bad.authenticated"], false);
      assert.equal(f["ssar.allowed"], true);
      assert.equal(f["ssar.reason"], null, "system:masters is allowed with no reason, as the privileged-group authorizer");
      assert.equal(f["ssrr.incomplete"], false);
      assert.equal(f["ssrr.star"], true, "the administrator's rules include */*");
      assert.equal(f["sar.py-user.get.eventually"], true);
      assert.equal(f["sar.py-user.get"], true);
      assert.equal(f["sar.py-user.get.reason"], 'RBAC: allowed by RoleBinding "py-binding/py" of Role "py-role" to User "py-user"');
      assert.equal(f["sar.py-user.delete"], false);
      assert.equal(f["sar.py-group.get"], false);
      assert.equal(f["lsar.py-sa.get-pod"], true);
      assert.equal(f["sar.after.py-group.get"], true, "the binding patched to py-group grants it");
      assert.equal(f["sar.after.py-user.get"], false, "and no longer py-user");
      assert.equal(f["viewer.create"], 403);
      assert.deepEqual(f["viewer.create.body"], {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: `roles.${GROUP} is forbidden: User "vera" cannot create resource "roles" in API group "${GROUP}" in the namespace "py"`,
        reason: "Forbidden",
        details: { group: GROUP, kind: "roles" },
        code: 403,
      });
      assert.equal(f["viewer.token"], 403);
      assert.equal(f["viewer.ssar.allowed"], false);
      assert.equal(f["role.afterDelete"], 404);
      assert.deepEqual(f["watch"], [
        ["ADDED", "V1Role", "py-role", 1],
        ["MODIFIED", "V1Role", "py-role", 1],
        ["DELETED", "V1Role", "py-role", 1],
      ]);
      // Nothing of the viewer's attempt was stored.
      assert.equal((await k(admin, "get", "role", "viewer-role", "-n", "py")).code, 1);
    }));

  it("@kubernetes/client-node: RBAC kinds, ServiceAccounts, TokenRequest, the reviews, a watch, a viewer's ApiException 403", () =>
    withLogsOnFailure(c, async () => {
      const namespace = "node";
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(admin);
      const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
      const core = kc.makeApiClient(k8s.CoreV1Api);
      const authn = kc.makeApiClient(k8s.AuthenticationV1Api);
      const authz = kc.makeApiClient(k8s.AuthorizationV1Api);

      // A watch of roles, under way once it has reported a role made before it.
      await rbac.createNamespacedRole({ namespace, body: { metadata: { name: "anchor" }, rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get"] }] } });
      const events: { phase: string; name: string; rules: number }[] = [];
      const ctl = await new k8s.Watch(kc).watch(
        `/apis/${GROUP}/v1/namespaces/${namespace}/roles`,
        {},
        (phase, obj: k8s.V1Role) => events.push({ phase, name: obj.metadata?.name ?? "", rules: obj.rules?.length ?? -1 }),
        () => undefined,
      );
      try {
        await waitFor(async () => events.some((e) => e.name === "anchor") || undefined, { ...WAIT, message: "the watch reports the anchor role" });

        // Role
        const role = await rbac.createNamespacedRole({
          namespace,
          body: { metadata: { name: "node-role" }, rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] }] },
        });
        assert.ok(role.metadata?.creationTimestamp instanceof Date);
        assert.deepEqual(plain((await rbac.readNamespacedRole({ name: "node-role", namespace })).rules), [
          { apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] },
        ]);
        assert.deepEqual(
          (await rbac.listNamespacedRole({ namespace })).items.map((r) => r.metadata?.name),
          ["anchor", "node-role"],
        );
        const patched = await rbac.patchNamespacedRole({
          name: "node-role",
          namespace,
          body: [{ op: "add", path: "/rules/-", value: { apiGroups: ["apps"], resources: ["deployments"], verbs: ["list"] } }],
        });
        assert.equal(patched.rules?.length, 2);

        // ClusterRoles: an aggregated one is filled from those its selector picks.
        const agg = await rbac.createClusterRole({
          body: {
            metadata: { name: "node-aggregate" },
            aggregationRule: { clusterRoleSelectors: [{ matchLabels: { "node.example.com/aggregate": "true" } }] },
          },
        });
        assert.deepEqual(plain(agg.aggregationRule?.clusterRoleSelectors?.[0]?.matchLabels), { "node.example.com/aggregate": "true" });
        await rbac.createClusterRole({
          body: {
            metadata: { name: "node-part", labels: { "node.example.com/aggregate": "true" } },
            rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"], resourceNames: ["settings"] }],
          },
        });
        const filled = await waitFor(
          async () => {
            const r = await rbac.readClusterRole({ name: "node-aggregate" });
            return r.rules?.length ? r : undefined;
          },
          { ...WAIT, message: "node-aggregate gains node-part's rule" },
        );
        assert.deepEqual(plain(filled.rules), [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"], resourceNames: ["settings"] }]);
        assert.ok((await rbac.listClusterRole({ labelSelector: "node.example.com/aggregate=true" })).items.some((r) => r.metadata?.name === "node-part"));
        const labelled = await rbac.patchClusterRole(
          { name: "node-part", body: { metadata: { labels: { extra: "yes" } } } },
          k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
        );
        assert.equal(labelled.metadata?.labels?.["extra"], "yes");

        // ServiceAccount, its token, the token reviewed.
        await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "node-sa" } } });
        assert.ok((await core.readNamespacedServiceAccount({ name: "node-sa", namespace })).metadata?.uid);
        assert.ok((await core.listNamespacedServiceAccount({ namespace })).items.some((s) => s.metadata?.name === "default"));
        const sa = await core.patchNamespacedServiceAccount(
          { name: "node-sa", namespace, body: { automountServiceAccountToken: false } },
          k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch),
        );
        assert.equal(sa.automountServiceAccountToken, false);
        const tr = await core.createNamespacedServiceAccountToken({ name: "node-sa", namespace, body: { spec: { audiences: ["api", "vault"] } } });
        assert.deepEqual(plain(tr.spec.audiences), ["api", "vault"]);
        assert.equal(tr.spec.expirationSeconds, 3600, "the default hour");
        assert.ok(tr.status?.expirationTimestamp instanceof Date);
        const review = await authn.createTokenReview({ body: { spec: { token: tr.status?.token ?? "", audiences: ["vault"] } } });
        assert.equal(review.status?.authenticated, true);
        assert.equal(review.status?.user?.username, "system:serviceaccount:node:node-sa");
        assert.deepEqual(plain(review.status?.audiences), ["vault"]);

        // Bindings: the account may get pods in the namespace through a RoleBinding, configmaps/settings through a ClusterRoleBinding.
        const rb = await rbac.createNamespacedRoleBinding({
          namespace,
          body: {
            metadata: { name: "node-binding" },
            roleRef: { apiGroup: GROUP, kind: "Role", name: "node-role" },
            subjects: [{ kind: "ServiceAccount", name: "node-sa", namespace }],
          },
        });
        assert.deepEqual(plain(rb.subjects), [{ kind: "ServiceAccount", name: "node-sa", namespace }]);
        await rbac.createClusterRoleBinding({
          body: {
            metadata: { name: "node-cluster-binding" },
            roleRef: { apiGroup: GROUP, kind: "ClusterRole", name: "node-aggregate" },
            subjects: [{ kind: "Group", name: "node-group", apiGroup: GROUP }],
          },
        });
        assert.equal((await rbac.readClusterRoleBinding({ name: "node-cluster-binding" })).roleRef.kind, "ClusterRole");
        assert.ok((await rbac.listClusterRoleBinding()).items.some((b) => b.metadata?.name === "cluster-admin"));
        assert.ok((await rbac.listNamespacedRoleBinding({ namespace })).items.some((b) => b.metadata?.name === "node-binding"));
        const user = `system:serviceaccount:${namespace}:node-sa`;
        const sar = async (spec: k8s.V1SubjectAccessReviewSpec) => (await authz.createSubjectAccessReview({ body: { spec } })).status;
        await waitFor(async () => (await sar({ user, resourceAttributes: { namespace, verb: "get", resource: "pods" } }))?.allowed || undefined, {
          ...WAIT,
          message: "node-sa may get pods once node-binding is read",
        });
        assert.equal((await sar({ user, resourceAttributes: { namespace, verb: "delete", resource: "pods" } }))?.allowed, false);
        await waitFor(
          async () =>
            (await sar({ user: "x", groups: ["node-group"], resourceAttributes: { namespace: "y", verb: "get", resource: "configmaps", name: "settings" } }))
              ?.allowed || undefined,
          { ...WAIT, message: "node-group may get configmaps/settings anywhere" },
        );
        const local = await authz.createNamespacedLocalSubjectAccessReview({
          namespace,
          body: { metadata: { namespace }, spec: { user, resourceAttributes: { namespace, verb: "list", group: "apps", resource: "deployments" } } },
        });
        assert.equal(local.status?.allowed, true);
        const self = await authz.createSelfSubjectAccessReview({
          body: { spec: { resourceAttributes: { verb: "create", group: GROUP, resource: "clusterroles" } } },
        });
        assert.equal(self.status?.allowed, true);
        const rules = await authz.createSelfSubjectRulesReview({ body: { spec: { namespace } } });
        assert.ok(rules.status?.resourceRules.some((r) => r.verbs.includes("*")));

        // The viewer: reads, and every write is an ApiException 403 with the Status body; nothing is stored.
        const vkc = new k8s.KubeConfig();
        vkc.loadFromFile(viewer);
        const vrbac = vkc.makeApiClient(k8s.RbacAuthorizationV1Api);
        const vcore = vkc.makeApiClient(k8s.CoreV1Api);
        await waitFor(async () => (await vcore.listNamespacedServiceAccount({ namespace })).items.length > 0 || undefined, {
          ...WAIT,
          message: "vera lists serviceaccounts in node",
        });
        const refused = await refusal(vrbac.createNamespacedRole({ namespace, body: { metadata: { name: "mine" }, rules: [] } }));
        assert.equal(refused.code, 403);
        assert.equal(refused.body["kind"], "Status");
        assert.equal(refused.body["reason"], "Forbidden");
        assert.equal(
          refused.body["message"],
          `roles.${GROUP} is forbidden: User "vera" cannot create resource "roles" in API group "${GROUP}" in the namespace "${namespace}"`,
        );
        const token = await refusal(vcore.createNamespacedServiceAccountToken({ name: "node-sa", namespace, body: { spec: { audiences: [] } } }));
        assert.equal(token.code, 403);
        assert.equal(
          token.body["message"],
          `serviceaccounts "node-sa" is forbidden: User "vera" cannot create resource "serviceaccounts/token" in API group "" in the namespace "${namespace}"`,
        );
        const vself = await vkc
          .makeApiClient(k8s.AuthorizationV1Api)
          .createSelfSubjectAccessReview({ body: { spec: { resourceAttributes: { namespace, verb: "create", resource: "pods" } } } });
        assert.equal(vself.status?.allowed, false);
        assert.equal((await refusal(rbac.readNamespacedRole({ name: "mine", namespace }))).code, 404, "nothing stored");

        // A bad binding is 422 naming the field; roleRef cannot change.
        const bad = await refusal(
          rbac.createClusterRoleBinding({
            body: { metadata: { name: "bad" }, roleRef: { apiGroup: GROUP, kind: "Role", name: "x" }, subjects: [] },
          }),
        );
        assert.equal(bad.code, 422);
        assert.match(String(bad.body["message"]), /roleRef\.kind: Unsupported value: "Role"/);

        // Deletes.
        await rbac.deleteNamespacedRoleBinding({ name: "node-binding", namespace });
        await rbac.deleteClusterRoleBinding({ name: "node-cluster-binding" });
        await rbac.deleteClusterRole({ name: "node-part" });
        await rbac.deleteClusterRole({ name: "node-aggregate" });
        await rbac.deleteNamespacedRole({ name: "node-role", namespace });
        await core.deleteNamespacedServiceAccount({ name: "node-sa", namespace });
        assert.equal((await refusal(core.readNamespacedServiceAccount({ name: "node-sa", namespace }))).code, 404);
        await waitFor(async () => events.some((e) => e.phase === "DELETED" && e.name === "node-role") || undefined, {
          ...WAIT,
          message: "the watch reports node-role deleted",
        });
        assert.deepEqual(
          events.filter((e) => e.name === "node-role").map((e) => [e.phase, e.rules]),
          [
            ["ADDED", 1],
            ["MODIFIED", 2],
            ["DELETED", 2],
          ],
        );
      } finally {
        ctl.abort();
      }
    }));
});
