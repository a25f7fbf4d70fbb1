// test-tier: servers
// Reads served by the api's object cache, through the official clients on a
// real cluster (api + nats-server + redis-server and a hollow node agent,
// whose heartbeat reads its Node with resourceVersion 0): paged lists with
// resourceVersion=0 (every page at the first page's revision) through
// @kubernetes/client-node and the official Python client, Kubernetes'
// ListOptions validation as the Python client reports it, and kubectl 1.20's
// list and raw reads.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, type TestCluster } from "./support/cluster.js";
import { writeKubeconfig } from "./support/kubectl.js";

const PYTHON = "/usr/bin/python3";
const KUBECTL_120 = "/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl";
const NAMES = ["oc-a", "oc-b", "oc-c", "oc-d", "oc-e"];

const PY_LIST = `
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(config_file=sys.argv[1])
core = client.CoreV1Api()
names, rvs, cont = [], set(), None
while True:
    kw = {"limit": 2, "_continue": cont} if cont else {"limit": 2, "resource_version": "0"}
    page = core.list_namespaced_config_map("default", **kw)
    names += [m.metadata.name for m in page.items]
    rvs.add(page.metadata.resource_version)
    cont = page.metadata._continue
    if not cont:
        break
nodes = [n.metadata.name for n in core.list_node(resource_version="0").items]
try:
    core.list_namespaced_config_map("default", resource_version="0", resource_version_match="Exact")
    refused = None
except ApiException as e:
    refused = {"status": e.status, "message": json.loads(e.body)["message"]}
print(json.dumps({"names": names, "rvs": sorted(rvs), "nodes": nodes, "refused": refused}))
`;

function run(bin: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(bin, args, { timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe("reads from the object cache through the official clients", () => {
  let c: TestCluster;
  let kubeconfig: string;
  let core: k8s.CoreV1Api;

  before(async () => {
    c = await startCluster({ actors: [{ name: "node-agent", args: ["--hollow-nodes", "1", "--node-name-prefix", "oc-"] }] });
    kubeconfig = writeKubeconfig(c);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(kubeconfig);
    core = kc.makeApiClient(k8s.CoreV1Api);
    for (const name of NAMES) await core.createNamespacedConfigMap({ namespace: "default", body: { metadata: { name }, data: { name } } });
  });
  after(async () => {
    await c?.stop();
  });

  it("the hollow node registers and is Ready (its heartbeat reads its Node with resourceVersion 0)", async () => {
    await waitFor(
      async () => {
        const nodes = await core.listNode({ resourceVersion: "0" });
        return nodes.items.some((n) => n.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"));
      },
      { timeoutMs: 60_000, message: "a Ready node listed from the cache" },
    );
  });

  it("@kubernetes/client-node: a list with resourceVersion=0 in pages of 2, every page at one revision", async () => {
    await waitFor(async () => (await core.listNamespacedConfigMap({ namespace: "default", resourceVersion: "0" })).items.length >= NAMES.length + 1, {
      timeoutMs: 30_000,
      message: "the cache holds the config maps",
    });
    const names: string[] = [];
    const rvs = new Set<string>();
    let cont: string | undefined;
    let pages = 0;
    do {
      const page = await core.listNamespacedConfigMap(
        cont ? { namespace: "default", limit: 2, _continue: cont } : { namespace: "default", limit: 2, resourceVersion: "0" },
      );
      pages++;
      names.push(...page.items.map((m) => m.metadata?.name ?? ""));
      rvs.add(page.metadata?.resourceVersion ?? "");
      cont = page.metadata?._continue || undefined;
    } while (cont);
    // kube-root-ca.crt is there too.
    assert.deepEqual(names, [...NAMES, "kube-root-ca.crt"].sort());
    assert.equal(pages, 3);
    assert.equal(rvs.size, 1);
  });

  it(
    "the official Python client: paged list with resource_version=0, list_node, and 422 for Exact at 0",
    { skip: existsSync(PYTHON) ? false : "no python3" },
    async () => {
      const r = await run(PYTHON, ["-c", PY_LIST, kubeconfig]);
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout) as { names: string[]; rvs: string[]; nodes: string[]; refused: { status: number; message: string } | null };
      assert.deepEqual(out.names, [...NAMES, "kube-root-ca.crt"].sort());
      assert.equal(out.rvs.length, 1);
      assert.ok(out.nodes.length === 1 && out.nodes[0]?.startsWith("oc-"));
      assert.equal(out.refused?.status, 422);
      assert.match(out.refused?.message ?? "", /resourceVersionMatch "exact" is forbidden for resourceVersion "0"/);
    },
  );

  it("kubectl 1.20: get configmaps, and raw reads with resourceVersion=0", { skip: existsSync(KUBECTL_120) ? false : "no kubectl 1.20" }, async () => {
    const k = (...args: string[]) => run(KUBECTL_120, ["--kubeconfig", kubeconfig, "--request-timeout=20s", ...args]);
    const list = await k("get", "configmaps", "-o", "name");
    assert.equal(list.code, 0, list.stderr);
    for (const name of NAMES) assert.match(list.stdout, new RegExp(`configmap/${name}\\n`));
    const one = await k("get", "--raw", "/api/v1/namespaces/default/configmaps/oc-c?resourceVersion=0");
    assert.equal(one.code, 0, one.stderr);
    assert.deepEqual((JSON.parse(one.stdout) as { data: unknown }).data, { name: "oc-c" });
    const page = await k("get", "--raw", "/api/v1/namespaces/default/configmaps?resourceVersion=0&limit=3");
    assert.equal(page.code, 0, page.stderr);
    assert.equal((JSON.parse(page.stdout) as { items: unknown[] }).items.length, 3);
  });
});
