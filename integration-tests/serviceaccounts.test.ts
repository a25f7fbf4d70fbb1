// test-tier: servers
// ServiceAccounts' way to the api on a real control plane (api, nats-server,
// redis-server, the replication actor) with kubectl 1.32: the `kubernetes`
// Service (10.96.0.1:443, its Endpoints the api's advertise address, where
// https also listens with a certificate naming it), kube-root-ca.crt in every
// namespace (the api's CA, re-created when deleted), and `kubectl create
// token` for a ServiceAccount whose token can do exactly what its Role grants.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";
import { dockerAvailable, startRealCluster, type RealCluster } from "./support/real-cluster.js";

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

/**
 * In the pod: the official Python client's load_incluster_config() (the
 * mounted token and ca.crt, KUBERNETES_SERVICE_HOST/PORT), then what it may
 * do; one line `RESULT {json}`.
 */
const IN_CLUSTER = `
import json, os, stat
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_incluster_config()
v1 = client.CoreV1Api()
out = {"apps": sorted(p.metadata.name for p in v1.list_namespaced_pod("apps").items)}
for key, call in [("default", lambda: v1.list_namespaced_pod("default")), ("secrets", lambda: v1.list_namespaced_secret("apps"))]:
    try:
        call()
        out[key] = 200
    except ApiException as e:
        out[key] = e.status
d = "/var/run/secrets/kubernetes.io/serviceaccount"
out["mode"] = oct(stat.S_IMODE(os.stat(d + "/token").st_mode))
out["namespace"] = open(d + "/namespace").read()
out["host"] = os.environ.get("KUBERNETES_SERVICE_HOST")
out["port"] = os.environ.get("KUBERNETES_SERVICE_PORT")
print("RESULT " + json.dumps(out), flush=True)
`;

/**
 * In the pod: @kubernetes/client-node (the repository's node_modules, bound
 * in by a read-only hostPath at its own path, imported by path; node is the
 * host's /usr, which the process runtime binds) and kc.loadFromCluster(),
 * then what it may do; one line `RESULT {json}`.
 */
const NODE_IN_CLUSTER = `
const k8s = await import(${JSON.stringify(path.resolve("node_modules/@kubernetes/client-node/dist/index.js"))});
const kc = new k8s.KubeConfig();
kc.loadFromCluster();
const v1 = kc.makeApiClient(k8s.CoreV1Api);
const status = (p) => p.then(() => 200, (e) => e.code ?? String(e));
const out = {
  apps: (await v1.listNamespacedPod({ namespace: "apps" })).items.map((p) => p.metadata.name).sort(),
  default: await status(v1.listNamespacedPod({ namespace: "default" })),
  secrets: await status(v1.listNamespacedSecret({ namespace: "apps" })),
  namespace: kc.getContextObject(kc.getCurrentContext()).namespace,
  server: kc.getCurrentCluster().server,
};
console.log("RESULT " + JSON.stringify(out));
`;

describe(
  "an in-cluster client in a pod, with its mounted token only (process runtime)",
  { skip: process.getuid?.() === 0 ? false : "real pods need root" },
  () => {
    let c: RealCluster;
    const k = (...args: string[]) => run("kubectl", args, c.kubeconfig);
    const ok = async (...args: string[]): Promise<string> => {
      const r = await k(...args);
      assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
      return r.stdout;
    };

    before(async () => {
      // ServiceAccount admission on (the harness turns it off by default): pods get their account's projected token.
      c = await startRealCluster("process", { nodes: 1, apiEnv: { CHOREO_SERVICE_ACCOUNT_ADMISSION: "1" } });
    });
    after(async () => {
      await c?.stop();
    });

    it("lists pods in apps as robot's Role grants, is refused in default and on secrets; the token file is the kubelet's; it dies with the pod", () =>
      withLogsOnFailure(c, async () => {
        await ok("create", "namespace", "apps");
        await ok("create", "serviceaccount", "robot", "-n", "apps");
        await ok("create", "role", "pod-lister", "-n", "apps", "--verb=list", "--resource=pods");
        await ok("create", "rolebinding", "robot-lists", "-n", "apps", "--role=pod-lister", "--serviceaccount=apps:robot");
        // RBAC takes a moment to see the new binding.
        await waitFor(
          async () =>
            (await k("auth", "can-i", "list", "pods", "-n", "apps", "--as", "system:serviceaccount:apps:robot")).stdout.trim() === "yes" ? true : undefined,
          WAIT,
        );
        const manifest = c.manifest(
          "in-cluster.yaml",
          JSON.stringify({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "operator", namespace: "apps" },
            spec: {
              serviceAccountName: "robot",
              restartPolicy: "Never",
              containers: [{ name: "main", image: "debian:bookworm", command: ["/usr/bin/python3", "-c", IN_CLUSTER] }],
            },
          }),
        );
        await ok("create", "-f", manifest);
        // Admission: the account's projected volume at the standard path.
        const pod = JSON.parse(await ok("get", "pod", "operator", "-n", "apps", "-o", "json")) as {
          metadata: { uid: string };
          spec: { volumes: { name: string; projected?: { sources: Record<string, unknown>[] } }[]; containers: { volumeMounts: { mountPath: string }[] }[] };
        };
        const vol = pod.spec.volumes.find((v) => v.name.startsWith("kube-api-access-"));
        assert.ok(vol?.projected, JSON.stringify(pod.spec.volumes));
        assert.deepEqual(vol.projected.sources[0], { serviceAccountToken: { expirationSeconds: 3607, path: "token" } });
        assert.ok(pod.spec.containers[0]!.volumeMounts.some((m) => m.mountPath === "/var/run/secrets/kubernetes.io/serviceaccount"));
        const result = await waitFor(
          async () => {
            const r = await k("logs", "operator", "-n", "apps");
            return /^RESULT /m.exec(r.stdout) ? r.stdout : undefined;
          },
          { timeoutMs: 120_000, intervalMs: 500 },
        );
        const out = JSON.parse(/^RESULT (.*)$/m.exec(result)![1]!) as Record<string, unknown>;
        const svcIp = JSON.parse(await ok("get", "svc", "kubernetes", "-n", "default", "-o", "json")) as { spec: { clusterIP: string } };
        assert.deepEqual(out, {
          apps: ["operator"],
          default: 403,
          secrets: 403,
          mode: "0o644",
          namespace: "apps",
          host: svcIp.spec.clusterIP,
          port: "443",
        });
        // On the node: the token under the pod's volume (0644 in a 0755 dir), bound to the pod: it authenticates while the pod lives.
        const volumes = path.join(c.dir, "nodes", c.nodes[0]!, "config-volumes", pod.metadata.uid);
        const dir = path.join(
          volumes,
          readdirSync(volumes).find((n) => n.startsWith("kube-api-access-"))!,
        );
        const tokenFile = path.join(dir, "token");
        assert.equal(statSync(tokenFile).mode & 0o777, 0o644);
        assert.equal(statSync(path.join(dir, "..data")).mode & 0o777, 0o755);
        const token = readFileSync(tokenFile, "utf8");
        const robot = (...args: string[]) => run("kubectl", args, kubeconfigAt(c, "pod-token", token));
        const who = await robot("auth", "whoami", "-o", "json");
        assert.equal(who.code, 0, who.stderr);
        const user = (JSON.parse(who.stdout) as { status: { userInfo: { username: string; extra: Record<string, string[]> } } }).status.userInfo;
        assert.equal(user.username, "system:serviceaccount:apps:robot");
        assert.deepEqual(user.extra["authentication.kubernetes.io/pod-name"], ["operator"]);
        // The pod deleted: its token is no credential any more.
        await ok("delete", "pod", "operator", "-n", "apps", "--wait=false");
        await waitFor(async () => (/Unauthorized|must be logged in/.test((await robot("get", "pods", "-n", "apps")).stderr) ? true : undefined), WAIT);
      }));

    it("@kubernetes/client-node's loadFromCluster() in a pod: pods of apps listed, default and secrets 403 (robot and its Role from above)", () =>
      withLogsOnFailure(c, async () => {
        const modules = path.resolve("node_modules");
        const manifest = c.manifest(
          "node-in-cluster.yaml",
          JSON.stringify({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "node-operator", namespace: "apps" },
            spec: {
              serviceAccountName: "robot",
              restartPolicy: "Never",
              volumes: [{ name: "modules", hostPath: { path: modules, type: "Directory" } }],
              containers: [
                {
                  name: "main",
                  image: "debian:bookworm",
                  command: [process.execPath, "--input-type=module", "-e", NODE_IN_CLUSTER],
                  volumeMounts: [{ name: "modules", mountPath: modules, readOnly: true }],
                },
              ],
            },
          }),
        );
        // A hostPath is no baseline pod: apps is made privileged (admission may take a moment to see the label).
        await ok("label", "namespace", "apps", "pod-security.kubernetes.io/enforce=privileged", "--overwrite");
        await waitFor(async () => ((await k("create", "-f", manifest)).code === 0 ? true : undefined), WAIT);
        const result = await waitFor(
          async () => {
            const r = await k("logs", "node-operator", "-n", "apps");
            if (/^RESULT /m.test(r.stdout)) return r.stdout;
            const phase = await k("get", "pod", "node-operator", "-n", "apps", "-o", "jsonpath={.status.phase}");
            assert.notEqual(phase.stdout.trim(), "Failed", `the pod failed without a result: ${r.stdout}${r.stderr}`);
            return undefined;
          },
          { timeoutMs: 120_000, intervalMs: 500 },
        );
        const out = JSON.parse(/^RESULT (.*)$/m.exec(result)![1]!) as Record<string, unknown>;
        const svcIp = JSON.parse(await ok("get", "svc", "kubernetes", "-n", "default", "-o", "json")) as { spec: { clusterIP: string } };
        assert.deepEqual(out, { apps: ["node-operator"], default: 403, secrets: 403, namespace: "apps", server: `https://${svcIp.spec.clusterIP}:443` });
      }));
  },
);

describe(
  "a docker-runtime pod of the default account gets the same volume and variables",
  { skip: process.getuid?.() !== 0 ? "real pods need root" : dockerAvailable() ? false : "no Docker engine answers on this machine" },
  () => {
    let c: RealCluster;
    const ok = async (...args: string[]): Promise<string> => {
      const r = await run("kubectl", args, c.kubeconfig);
      assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
      return r.stdout;
    };

    before(async () => {
      c = await startRealCluster("docker", { nodes: 1, apiEnv: { CHOREO_SERVICE_ACCOUNT_ADMISSION: "1" } });
    });
    after(async () => {
      await c?.stop();
    });

    it("runs as apps/default (made by the replication actor), its token and CA mounted, KUBERNETES_SERVICE_HOST set; the token is the pod's", () =>
      withLogsOnFailure(c, async () => {
        await ok("create", "namespace", "apps");
        const script =
          'd=/var/run/secrets/kubernetes.io/serviceaccount; echo "RESULT $(stat -L -c %a $d/token) $(cat $d/namespace) $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT $(test -s $d/ca.crt && echo ca)"; exec sleep 3600';
        const manifest = c.manifest(
          "docker-pod.yaml",
          JSON.stringify({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "plain", namespace: "apps" },
            spec: { containers: [{ name: "main", image: "local/busybox:1.35", command: ["sh", "-c", script] }] },
          }),
        );
        await ok("create", "-f", manifest);
        const line = await waitFor(
          async () => {
            const r = await run("kubectl", ["logs", "plain", "-n", "apps"], c.kubeconfig);
            return /^RESULT .*$/m.exec(r.stdout)?.[0];
          },
          { timeoutMs: 120_000, intervalMs: 500 },
        );
        const svc = JSON.parse(await ok("get", "svc", "kubernetes", "-n", "default", "-o", "json")) as { spec: { clusterIP: string } };
        assert.equal(line, `RESULT 644 apps ${svc.spec.clusterIP}:443 ca`);
        const pod = JSON.parse(await ok("get", "pod", "plain", "-n", "apps", "-o", "json")) as {
          metadata: { uid: string };
          spec: { serviceAccountName: string };
        };
        assert.equal(pod.spec.serviceAccountName, "default");
        const volumes = path.join(c.dir, "nodes", c.nodes[0]!, "config-volumes", pod.metadata.uid);
        const token = readFileSync(
          path.join(
            volumes,
            readdirSync(volumes).find((n) => n.startsWith("kube-api-access-"))!,
            "token",
          ),
          "utf8",
        );
        const who = await run("kubectl", ["auth", "whoami", "-o", "json"], kubeconfigAt(c, "docker-pod", token));
        assert.equal(who.code, 0, who.stderr);
        const user = (JSON.parse(who.stdout) as { status: { userInfo: { username: string; extra: Record<string, string[]> } } }).status.userInfo;
        assert.equal(user.username, "system:serviceaccount:apps:default");
        assert.deepEqual(user.extra["authentication.kubernetes.io/pod-name"], ["plain"]);
      }));
  },
);

/** A kubeconfig for the cluster's https url with `token`, trusting the api's CA. */
function kubeconfigAt(c: TestCluster, name: string, token: string): string {
  const ca = readFileSync(path.join(c.dir, "api", "pki", "apiserver.crt")).toString("base64");
  const file = path.join(c.dir, `kubeconfig-${name}`);
  writeFileSync(
    file,
    `apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster: {server: "${c.httpsUrl}", certificate-authority-data: ${ca}}\nusers:\n- name: u\n  user: {token: "${token}"}\ncontexts:\n- name: t\n  context: {cluster: t, user: u}\ncurrent-context: t\n`,
  );
  return file;
}
