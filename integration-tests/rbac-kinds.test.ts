// test-tier: servers
// The RBAC kinds and ServiceAccounts with kubectl 1.32 against a real control
// plane (api, nats-server, redis-server, the replication actor): the typed
// create commands (protobuf), get tables, the default policy at start, the
// aggregation of a new ClusterRole into view, a namespace's default
// ServiceAccount (re-created when deleted), and 422s for bad bindings.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

const WAIT = { timeoutMs: 60_000, intervalMs: 300 };

describe("RBAC kinds and ServiceAccounts with kubectl 1.32", () => {
  let c: TestCluster;
  let kc: string;
  const k = (...args: string[]) => run("kubectl", args, kc);
  const ok = async (...args: string[]): Promise<string> => {
    const r = await k(...args);
    assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };
  const json = async (...args: string[]): Promise<Record<string, any>> => JSON.parse(await ok(...args, "-o", "json")); // eslint-disable-line @typescript-eslint/no-explicit-any -- kubectl's JSON, read by path in assertions
  before(async () => {
    c = await startCluster({ actors: [{ name: "replication" }] });
    kc = writeKubeconfig(c);
  });
  after(async () => {
    await c?.stop();
  });

  it("creates and gets every kind with the typed commands, as Kubernetes prints them", () =>
    withLogsOnFailure(c, async () => {
      await ok("create", "namespace", "team");
      const role = await k("create", "role", "pod-reader", "-n", "team", "--verb=get,list", "--resource=pods,pods/log", "-v=8");
      assert.equal(role.code, 0, role.stderr);
      assert.match(role.stderr, /Content-Type: application\/vnd\.kubernetes\.protobuf/, "kubectl sent protobuf");
      assert.deepEqual((await json("get", "role", "pod-reader", "-n", "team")).rules, [
        { apiGroups: [""], resources: ["pods", "pods/log"], verbs: ["get", "list"] },
      ]);
      await ok("create", "clusterrole", "probe-reader", "--verb=get", "--non-resource-url=/healthz,/version");
      assert.deepEqual((await json("get", "clusterrole", "probe-reader")).rules, [{ nonResourceURLs: ["/healthz", "/version"], verbs: ["get"] }]);
      await ok("create", "serviceaccount", "ci", "-n", "team");
      await ok("create", "rolebinding", "read-pods", "-n", "team", "--role=pod-reader", "--user=alice", "--group=devs", "--serviceaccount=team:ci");
      const rb = await json("get", "rolebinding", "read-pods", "-n", "team");
      assert.deepEqual(rb.roleRef, { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "pod-reader" });
      assert.deepEqual(rb.subjects, [
        { apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "alice" },
        { apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "devs" },
        { kind: "ServiceAccount", name: "ci", namespace: "team" },
      ]);
      await ok("create", "clusterrolebinding", "ci-view", "--clusterrole=view", "--serviceaccount=team:ci");

      assert.match(await ok("get", "roles", "-n", "team"), /^NAME\s+CREATED AT\npod-reader\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$/);
      assert.match(await ok("get", "rolebindings", "-n", "team"), /^NAME\s+ROLE\s+AGE\nread-pods\s+Role\/pod-reader\s+\d+s\n$/);
      assert.match(
        await ok("get", "rolebindings", "-n", "team", "-o", "wide"),
        /^NAME\s+ROLE\s+AGE\s+USERS\s+GROUPS\s+SERVICEACCOUNTS\nread-pods\s+Role\/pod-reader\s+\d+s\s+alice\s+devs\s+team\/ci\n$/,
      );
      assert.match(await ok("get", "clusterrolebinding", "ci-view"), /^NAME\s+ROLE\s+AGE\nci-view\s+ClusterRole\/view\s+\d+s\n$/);
      assert.match(await ok("get", "sa", "ci", "-n", "team"), /^NAME\s+SECRETS\s+AGE\nci\s+0\s+\d+s\n$/);
      // Bad bindings are 422 naming the field, and nothing is stored.
      const bad = await k("create", "rolebinding", "bad", "-n", "team", "--role=pod-reader", "--serviceaccount=nonamespace");
      assert.notEqual(bad.code, 0);
      const crb = await k("create", "clusterrolebinding", "bad", "--clusterrole=view", "--serviceaccount=team:ci", "--dry-run=client", "-o", "json");
      const roleToRole = JSON.parse(crb.stdout) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- kubectl's JSON
      roleToRole["roleRef"].kind = "Role";
      const applied = await run("kubectl", ["create", "-f", "-"], kc, { input: JSON.stringify(roleToRole) });
      assert.notEqual(applied.code, 0);
      assert.match(applied.stderr, /roleRef\.kind: Unsupported value: "Role": supported values: "ClusterRole"/);
      assert.equal((await k("get", "clusterrolebinding", "bad")).code, 1);
      // roleRef cannot change.
      const patched = await k("patch", "rolebinding", "read-pods", "-n", "team", "--type=merge", "-p", '{"roleRef":{"kind":"ClusterRole","name":"view"}}');
      assert.notEqual(patched.code, 0);
      assert.match(patched.stderr, /cannot change roleRef/);
    }));

  it("serves the default roles and keeps view aggregated: a new role labelled aggregate-to-view adds its rule", () =>
    withLogsOnFailure(c, async () => {
      assert.match(await ok("get", "clusterrolebinding", "cluster-admin"), /cluster-admin\s+ClusterRole\/cluster-admin/);
      // The aggregation controller has filled view from system:aggregate-to-view.
      await waitFor(async () => (await json("get", "clusterrole", "view")).rules?.some((r: { resources?: string[] }) => r.resources?.includes("pods/log")), {
        ...WAIT,
        message: "view aggregated from system:aggregate-to-view",
      });
      await ok("create", "clusterrole", "widgets-reader", "--verb=get,list", "--resource=configmaps", "--resource-name=widgets");
      await ok("label", "clusterrole", "widgets-reader", "rbac.authorization.k8s.io/aggregate-to-view=true");
      const has = async (role: string) =>
        ((await json("get", "clusterrole", role)).rules as { resourceNames?: string[] }[]).some((r) => r.resourceNames?.includes("widgets"));
      await waitFor(() => has("view"), { ...WAIT, message: "view gains widgets-reader's rule" });
      // view is aggregated into edit, edit into admin.
      await waitFor(() => has("admin"), { ...WAIT, message: "admin gains it through edit" });
      await ok("delete", "clusterrole", "widgets-reader");
      await waitFor(async () => !(await has("view")), { ...WAIT, message: "view loses the rule of a deleted role" });
    }));

  it("gives every namespace a default ServiceAccount, and makes it again when it is deleted", () =>
    withLogsOnFailure(c, async () => {
      await ok("create", "namespace", "fresh");
      await waitFor(async () => (await k("get", "serviceaccount", "default", "-n", "fresh")).code === 0, { ...WAIT, message: "fresh/default" });
      const uid = (await json("get", "sa", "default", "-n", "fresh")).metadata.uid as string;
      await ok("delete", "serviceaccount", "default", "-n", "fresh");
      await waitFor(
        async () => {
          const r = await k("get", "sa", "default", "-n", "fresh", "-o", "jsonpath={.metadata.uid}");
          return r.code === 0 && r.stdout !== "" && r.stdout !== uid;
        },
        { ...WAIT, message: "fresh/default re-created" },
      );
      await waitFor(async () => (await k("get", "serviceaccount", "default", "-n", "default")).code === 0, { ...WAIT, message: "default/default" });
    }));
});
