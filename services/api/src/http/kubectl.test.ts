// test-tier: servers
// Real kubectl (1.32 from Debian) against the gateway over https with a
// token, on the in-memory handlers: get, apply twice, label, scale, delete.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { silentLogger } from "@choreo/kit/log";
import { createGateway, type Gateway } from "./gateway.js";
import { MemoryHandlers } from "./testing/memory-handlers.js";
import { ensureServingCert } from "./tls.js";
import { kubectlInstalled, kubectlRunner, writeKubeconfig } from "./testing/kubectl.js";

const exec = promisify(execFile);
const hasKubectl = await kubectlInstalled();

const POD = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: nginx
    image: nginx:1.14.2
    ports:
    - containerPort: 80
`;

describe("kubectl", { skip: hasKubectl ? false : "kubectl not on PATH" }, () => {
  let dir: string;
  let gateway: Gateway;
  let handlers: MemoryHandlers;
  let kubeconfig: string;
  const TOKEN = "kubectl-test-token";

  const kubectl = (...args: string[]) => kubectlRunner(dir, kubeconfig)(...args);

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "choreo-kubectl-"));
    const cert = await ensureServingCert(dir, []);
    handlers = new MemoryHandlers();
    handlers.seed({ apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } });
    gateway = createGateway({ handlers, log: silentLogger(), tokens: [TOKEN] });
    const { httpsPort } = await gateway.listen({ host: "127.0.0.1", httpsPort: 0, tls: cert });
    kubeconfig = writeKubeconfig(dir, { server: `https://127.0.0.1:${httpsPort}`, caPem: cert.caPem, token: TOKEN });
    writeFileSync(path.join(dir, "pod.yaml"), POD);
  });
  after(async () => {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("gets, applies twice, labels and deletes", async () => {
    const empty = await kubectl("get", "pods");
    assert.equal(empty.code, 0, empty.stderr);
    assert.match(empty.stderr, /No resources found in default namespace/);

    const created = await kubectl("apply", "-f", path.join(dir, "pod.yaml"));
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /pod\/web created/);
    const stored = await handlers.get({ resource: "pods", namespace: "default", name: "web" });
    assert.ok(stored.kind?.value.metadata?.annotations["kubectl.kubernetes.io/last-applied-configuration"]);

    writeFileSync(path.join(dir, "pod.yaml"), POD.replace("app: web", "app: web\n    tier: front"));
    const applied = await kubectl("apply", "-f", path.join(dir, "pod.yaml"));
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(applied.stdout, /pod\/web configured/);

    const labeled = await kubectl("label", "pod", "web", "env=prod");
    assert.equal(labeled.code, 0, labeled.stderr);
    assert.match(labeled.stdout, /pod\/web labeled/);

    const got = await kubectl("get", "pods", "-o", "jsonpath={.items[0].metadata.labels}");
    assert.equal(got.code, 0, got.stderr);
    assert.deepEqual(JSON.parse(got.stdout), { app: "web", tier: "front", env: "prod" });

    const table = await kubectl("get", "po", "web");
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^NAME\s+.*AGE/m);
    assert.match(table.stdout, /^web\s/m);

    const deleted = await kubectl("delete", "pod", "web");
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stdout, /pod "web" deleted/);
    const gone = await kubectl("get", "pod", "web");
    assert.notEqual(gone.code, 0);
    assert.match(gone.stderr, /pods "web" not found/);
  });

  it("creates and scales a replication controller, refuses unknown fields", async () => {
    writeFileSync(
      path.join(dir, "rc.yaml"),
      `apiVersion: v1
kind: ReplicationController
metadata:
  name: nginx
spec:
  replicas: 1
  selector:
    app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx
`,
    );
    const created = await kubectl("create", "-f", path.join(dir, "rc.yaml"));
    assert.equal(created.code, 0, created.stderr);
    const scaled = await kubectl("scale", "rc", "nginx", "--replicas=3");
    assert.equal(scaled.code, 0, scaled.stderr);
    assert.match(scaled.stdout, /replicationcontroller\/nginx scaled/);
    const replicas = await kubectl("get", "rc", "nginx", "-o", "jsonpath={.spec.replicas}");
    assert.equal(replicas.stdout, "3");
    const all = await kubectl("get", "all");
    assert.equal(all.code, 0, all.stderr);
    assert.match(all.stdout, /replicationcontroller\/nginx/);

    writeFileSync(path.join(dir, "bad.yaml"), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containerz: []\n");
    const bad = await kubectl("create", "-f", path.join(dir, "bad.yaml"));
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /unknown field "spec.containerz"/);
  });

  it("reports a wrong token as Unauthorized", async () => {
    writeFileSync(path.join(dir, "bad"), (await import("node:fs")).readFileSync(kubeconfig, "utf8").replace(TOKEN, "nope"));
    const r = await exec("kubectl", ["--kubeconfig", path.join(dir, "bad"), "--cache-dir", path.join(dir, "cache2"), "get", "pods"], { timeout: 9000 }).then(
      () => ({ code: 0, stderr: "" }),
      (e: { code?: number; stderr?: string }) => ({ code: e.code ?? 1, stderr: e.stderr ?? "" }),
    );
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /You must be logged in to the server/);
  });
});
