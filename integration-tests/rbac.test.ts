// test-tier: servers
// "A cluster admin hands a developer a kubeconfig that can deploy in one
// namespace and nothing else": choreo kubeconfig create signs alice a
// client certificate (group dev), a RoleBinding gives dev the edit role in
// namespace dev, and alice — with kubectl 1.32 and 1.20 — deploys there and
// is refused everywhere else, in the apiserver's words.
import assert from "node:assert/strict";
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

const ROOT = path.resolve(import.meta.dirname, "..");
const CHOREO = path.join(ROOT, "services/cli/bin/choreo.js");
const KUBECTL_120 = "/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl";

describe("RBAC: a developer's kubeconfig for one namespace", () => {
  let c: TestCluster;
  let admin: string;
  let alice: string;
  const k = (kc: string, ...args: string[]) => run("kubectl", args, kc);

  before(async () => {
    c = await startCluster({
      actors: [{ name: "node-agent", env: { CHOREO_HOLLOW_NODES: "1" } }, { name: "scheduler" }, { name: "replication", env: { CHOREO_EVENTS: "0" } }],
    });
    admin = writeKubeconfig(c);
    // The api's data dir holds the client CA; choreo kubeconfig create reads the server and CA from DIR/kubeconfig.
    copyFileSync(admin, path.join(c.dir, "api", "kubeconfig"));
    alice = path.join(c.dir, "alice.kubeconfig");
    const made = await run(
      process.execPath,
      [CHOREO, "kubeconfig", "create", "alice", "--group", "dev", "--namespace", "dev", "--data-dir", path.join(c.dir, "api"), "-o", alice],
      admin,
    );
    assert.equal(made.code, 0, made.stderr);
    assert.match(readFileSync(alice, "utf8"), /client-certificate-data: /);
    for (const ns of ["dev", "prod"]) assert.equal((await k(admin, "create", "namespace", ns)).code, 0);
    const bound = await k(admin, "create", "rolebinding", "dev-edit", "--clusterrole=edit", "--group=dev", "-n", "dev");
    assert.equal(bound.code, 0, bound.stderr);
    assert.equal((await k(admin, "create", "secret", "generic", "db", "--from-literal=password=hunter2", "-n", "prod")).code, 0);
  });
  after(async () => {
    await c?.stop();
  });

  it("alice is who her certificate says, and can-i answers as RBAC decides", async () => {
    const who = await k(alice, "auth", "whoami", "-o", "json");
    assert.equal(who.code, 0, who.stderr);
    const info = (JSON.parse(who.stdout) as { status: { userInfo: { username: string; groups: string[] } } }).status.userInfo;
    assert.equal(info.username, "alice");
    assert.deepEqual(info.groups, ["dev", "system:authenticated"]);
    const can = async (...args: string[]) => (await k(alice, "auth", "can-i", ...args)).stdout.trim();
    assert.equal(await can("create", "deployments", "-n", "dev"), "yes");
    assert.equal(await can("create", "pods/exec", "-n", "dev"), "yes");
    assert.equal(await can("create", "deployments", "-n", "prod"), "no");
    assert.equal(await can("get", "secrets", "-n", "prod"), "no");
    assert.equal(await can("list", "nodes"), "no");
    assert.equal(await can("create", "rolebindings", "-n", "dev"), "no", "edit cannot grant");
  });

  it("alice deploys in dev: the Deployment's pods run", async () => {
    const created = await k(alice, "create", "deployment", "web", "--image=nginx:1.25", "--replicas=2");
    assert.equal(created.code, 0, created.stderr);
    await waitFor(
      async () => {
        const r = await k(alice, "get", "pods", "-l", "app=web", "-o", 'jsonpath={range .items[*]}{.status.phase}{"\\n"}{end}');
        return (
          r.stdout
            .trim()
            .split("\n")
            .filter((p) => p === "Running").length === 2
        );
      },
      { timeoutMs: 60_000, message: "2 web pods running in dev" },
    );
    const scaled = await k(alice, "scale", "deployment", "web", "--replicas=1");
    assert.equal(scaled.code, 0, scaled.stderr);
  });

  it("alice is refused everywhere else with the apiserver's Forbidden, and nothing changes", async () => {
    const pods = await k(alice, "get", "pods", "-n", "prod");
    assert.equal(pods.code, 1);
    assert.match(
      pods.stderr,
      /Error from server \(Forbidden\): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "prod"/,
    );
    const secret = await k(alice, "get", "secret", "db", "-n", "prod");
    assert.match(secret.stderr, /secrets "db" is forbidden: User "alice" cannot get resource "secrets" in API group "" in the namespace "prod"/);
    const nodes = await k(alice, "get", "nodes");
    assert.match(nodes.stderr, /nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope/);
    const deploy = await k(alice, "create", "deployment", "intruder", "--image=nginx:1.25", "-n", "prod");
    assert.equal(deploy.code, 1);
    assert.match(deploy.stderr, /deployments.apps is forbidden: User "alice" cannot create resource "deployments" in API group "apps" in the namespace "prod"/);
    const grant = await k(alice, "create", "rolebinding", "mine", "--clusterrole=admin", "--user=alice", "-n", "dev");
    assert.equal(grant.code, 1);
    assert.match(grant.stderr, /rolebindings.rbac.authorization.k8s.io is forbidden: User "alice" cannot create resource "rolebindings"/);
    const escalate = await k(alice, "create", "clusterrolebinding", "mine", "--clusterrole=cluster-admin", "--user=alice");
    assert.equal(escalate.code, 1);
    assert.match(escalate.stderr, /at the cluster scope/);
    // Nothing of it was stored.
    assert.match((await k(admin, "get", "deployments", "-n", "prod")).stderr, /No resources found/);
    assert.equal((await k(admin, "get", "rolebinding", "mine", "-n", "dev")).code, 1);
    assert.equal((await k(admin, "get", "clusterrolebinding", "mine")).code, 1);
  });

  it("the administrator impersonating alice has alice's rights, no more", async () => {
    const r = await k(admin, "get", "pods", "-n", "prod", "--as", "alice", "--as-group", "dev");
    assert.equal(r.code, 1);
    assert.match(r.stderr, /User "alice" cannot list resource "pods"/);
    assert.equal((await k(admin, "get", "pods", "-n", "dev", "--as", "alice", "--as-group", "dev")).code, 0);
  });

  it("kubectl 1.20 with alice's kubeconfig: dev yes, prod no", async () => {
    const mine = await run(KUBECTL_120, ["get", "deployments", "-n", "dev"], alice);
    assert.equal(mine.code, 0, mine.stderr);
    assert.match(mine.stdout, /web/);
    const theirs = await run(KUBECTL_120, ["get", "pods", "-n", "prod"], alice);
    assert.equal(theirs.code, 1);
    assert.match(theirs.stderr, /Forbidden/);
  });

  it("an admin of dev cannot grant more than she holds: cluster-admin in dev is refused, view is not", async () => {
    assert.equal((await k(admin, "create", "rolebinding", "dev-admin", "--clusterrole=admin", "--group=dev", "-n", "dev")).code, 0);
    const tooMuch = await k(alice, "create", "rolebinding", "grab", "--clusterrole=cluster-admin", "--user=alice", "-n", "dev");
    assert.equal(tooMuch.code, 1);
    assert.match(
      tooMuch.stderr,
      /rolebindings.rbac.authorization.k8s.io "grab" is forbidden: user "alice" \(groups=\["dev" "system:authenticated"\]\) is attempting to grant RBAC permissions not currently held/,
    );
    assert.equal((await k(admin, "get", "rolebinding", "grab", "-n", "dev")).code, 1, "nothing stored");
    const fair = await k(alice, "create", "rolebinding", "bob-view", "--clusterrole=view", "--user=bob", "-n", "dev");
    assert.equal(fair.code, 0, fair.stderr);
    const role = await k(alice, "create", "role", "secret-reader", "--verb=get", "--resource=secrets", "-n", "dev");
    assert.equal(role.code, 0, `${role.stderr} — admin holds get secrets in dev`);
    // bob, granted view by alice, reads but cannot create: a view user creating a pod is refused.
    const asBob = ["--as", "bob", "-n", "dev"];
    assert.equal((await k(admin, "get", "pods", ...asBob)).code, 0);
    const create = await k(admin, "run", "nope", "--image=nginx:1.25", ...asBob);
    assert.equal(create.code, 1);
    assert.match(create.stderr, /pods is forbidden: User "bob" cannot create resource "pods" in API group "" in the namespace "dev"/);
    assert.equal((await k(admin, "get", "pod", "nope", "-n", "dev")).code, 1, "nothing stored");
  });

  it("a token file user has only what is bound to them; an unknown token and no credentials are 401", async () => {
    const anon = path.join(c.dir, "anon.kubeconfig");
    writeFileSync(anon, readFileSync(admin, "utf8").replace(/token: .*/, "token: not-a-token"));
    const r = await k(anon, "get", "pods");
    assert.equal(r.code, 1);
    assert.match(r.stderr, /Unauthorized/);
  });
});
