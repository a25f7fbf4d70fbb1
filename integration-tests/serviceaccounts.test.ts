// test-tier: servers
// ServiceAccounts' way to the api on a real control plane (api, nats-server,
// redis-server, the replication actor) with kubectl 1.32: the `kubernetes`
// Service (10.96.0.1:443, its Endpoints the api's advertise address, where
// https also listens with a certificate naming it), kube-root-ca.crt in every
// namespace (the api's CA, re-created when deleted), and `kubectl create
// token` for a ServiceAccount whose token can do exactly what its Role grants.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

const WAIT = { timeoutMs: 60_000, intervalMs: 300 };
// The api advertises the host's first non-loopback IPv4 (CHOREO_ADVERTISE_ADDRESS unset).
const hostIps = Object.values(os.networkInterfaces()).flatMap((l) => (l ?? []).filter((a) => a.family === "IPv4" && !a.internal).map((a) => a.address));
const advertise = hostIps.find((a) => !a.startsWith("169.254."));

describe("ServiceAccounts reach the api", { skip: advertise ? false : "the host has no non-loopback IPv4" }, () => {
  let c: TestCluster;
  let kc: string;
  const k = (...args: string[]) => run("kubectl", args, kc);
  const ok = async (...args: string[]): Promise<string> => {
    const r = await k(...args);
    assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };
  const json = async (...args: string[]): Promise<Record<string, any>> => JSON.parse(await ok(...args, "-o", "json")); // eslint-disable-line @typescript-eslint/no-explicit-any -- kubectl's JSON, read by path in assertions
  /** A kubeconfig for `server` with `token`, trusting the api's CA. */
  const kubeconfigFor = (name: string, server: string, token: string): string => {
    const ca = readFileSync(path.join(c.dir, "api", "pki", "apiserver.crt")).toString("base64");
    const file = path.join(c.dir, `kubeconfig-${name}`);
    writeFileSync(
      file,
      `apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster: {server: "${server}", certificate-authority-data: ${ca}}\nusers:\n- name: u\n  user: {token: "${token}"}\ncontexts:\n- name: t\n  context: {cluster: t, user: u, namespace: apps}\ncurrent-context: t\n`,
    );
    return file;
  };

  before(async () => {
    c = await startCluster({ actors: [{ name: "replication" }] });
    kc = writeKubeconfig(c);
  });
  after(async () => {
    await c?.stop();
  });

  it("serves default/kubernetes at 10.96.0.1:443 with Endpoints on the advertise address, where https answers", () =>
    withLogsOnFailure(c, async () => {
      const httpsPort = c.apis[0]!.httpsPort;
      const svc = await waitFor(async () => ((await k("get", "svc", "kubernetes", "-n", "default", "-o", "json")).code === 0 ? true : undefined), WAIT).then(
        () => json("get", "svc", "kubernetes", "-n", "default"),
      );
      assert.equal(svc.spec.clusterIP, "10.96.0.1");
      assert.deepEqual(svc.spec.ports, [{ name: "https", port: 443, protocol: "TCP", targetPort: httpsPort }]);
      assert.equal(svc.spec.selector, undefined);
      const ep = await json("get", "endpoints", "kubernetes", "-n", "default");
      assert.deepEqual(ep.subsets, [{ addresses: [{ ip: advertise }], ports: [{ name: "https", port: httpsPort, protocol: "TCP" }] }]);
      // The api answers there, with a certificate that names the address (kubectl verifies it).
      const there = await run("kubectl", ["get", "--raw", "/version"], kubeconfigFor("advertise", `https://${advertise}:${httpsPort}`, c.token));
      assert.equal(there.code, 0, there.stderr);
      assert.match(there.stdout, /gitVersion/);
      // Deleted: made again.
      await ok("delete", "svc", "kubernetes", "-n", "default");
      await waitFor(async () => ((await k("get", "svc", "kubernetes", "-n", "default")).code === 0 ? true : undefined), WAIT);
    }));

  it("keeps kube-root-ca.crt with the api's CA in every namespace, a new one too, re-created when deleted", () =>
    withLogsOnFailure(c, async () => {
      const ca = readFileSync(path.join(c.dir, "api", "pki", "apiserver.crt"), "utf8");
      const caIn = async (ns: string) => {
        const r = await k("get", "configmap", "kube-root-ca.crt", "-n", ns, "-o", "jsonpath={.data.ca\\.crt}");
        return r.code === 0 && r.stdout.trim() === ca.trim() ? true : undefined;
      };
      await waitFor(() => caIn("default"), WAIT);
      await waitFor(() => caIn("kube-system"), WAIT);
      await ok("create", "namespace", "fresh");
      await waitFor(() => caIn("fresh"), WAIT);
      await ok("delete", "configmap", "kube-root-ca.crt", "-n", "fresh");
      await waitFor(() => caIn("fresh"), WAIT);
    }));

  it("kubectl create token: a ServiceAccount's token can do what its Role grants and nothing else", () =>
    withLogsOnFailure(c, async () => {
      await ok("create", "namespace", "apps");
      await ok("create", "serviceaccount", "robot", "-n", "apps");
      await ok("create", "role", "pod-lister", "-n", "apps", "--verb=list", "--resource=pods");
      await ok("create", "rolebinding", "robot-lists", "-n", "apps", "--role=pod-lister", "--serviceaccount=apps:robot");
      const token = (await ok("create", "token", "robot", "-n", "apps", "--duration", "20m")).trim();
      const robot = kubeconfigFor("robot", c.httpsUrl, token);
      const as = (...args: string[]) => run("kubectl", args, robot);
      const who = await as("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}");
      assert.equal(who.code, 0, who.stderr);
      assert.equal(who.stdout.trim(), "system:serviceaccount:apps:robot");
      // RBAC takes a moment to see the new binding.
      await waitFor(async () => ((await as("get", "pods", "-n", "apps")).code === 0 ? true : undefined), WAIT);
      const other = await as("get", "pods", "-n", "default");
      assert.notEqual(other.code, 0);
      assert.match(
        other.stderr,
        /pods is forbidden: User "system:serviceaccount:apps:robot" cannot list resource "pods" in API group "" in the namespace "default"/,
      );
      const secrets = await as("get", "secrets", "-n", "apps");
      assert.notEqual(secrets.code, 0);
      assert.match(secrets.stderr, /secrets is forbidden/);
      // The account deleted: its token is no credential any more.
      await ok("delete", "serviceaccount", "robot", "-n", "apps");
      await waitFor(async () => (/Unauthorized|must be logged in/.test((await as("get", "pods", "-n", "apps")).stderr) ? true : undefined), WAIT);
    }));
});
