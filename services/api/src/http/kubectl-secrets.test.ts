// test-tier: servers
// Real kubectl 1.32 and Secrets, through the gateway over the real registry
// (redis-server, nats-server, Secrets sealed at rest): the typed `create
// secret` commands (protobuf), jsonpath reads, the table, stringData by
// apply, and a configmap beside them.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { silentLogger } from "@choreo/kit/log";
import { startStack, type Stack } from "../testing/stack.js";
import { createGateway, type Gateway } from "./gateway.js";
import { ensureServingCert } from "./tls.js";
import { kubectlInstalled, kubectlRunner, writeKubeconfig } from "./testing/kubectl.js";

const exec = promisify(execFile);
const hasKubectl = await kubectlInstalled();
type Json = Record<string, unknown>;

describe("kubectl and secrets", { skip: hasKubectl ? false : "kubectl not on PATH" }, () => {
  let dir: string;
  let stack: Stack;
  let gateway: Gateway;
  let kubeconfig: string;
  const TOKEN = "kubectl-secrets-token";

  const kubectl = (...args: string[]) => kubectlRunner(dir, kubeconfig, { requestTimeoutSeconds: 20 })(...args);
  const ok = async (...args: string[]): Promise<string> => {
    const r = await kubectl(...args);
    assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };
  const dataOf = async (name: string): Promise<Record<string, string>> => {
    const s = JSON.parse(await ok("get", "secret", name, "-o", "json")) as Json;
    const data = (s["data"] ?? {}) as Record<string, string>;
    return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]));
  };

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "choreo-kubectl-secrets-"));
    stack = await startStack();
    const cert = await ensureServingCert(dir, []);
    gateway = createGateway({ handlers: stack.registry, log: silentLogger(), tokens: [TOKEN] });
    const { httpsPort } = await gateway.listen({ host: "127.0.0.1", httpsPort: 0, tls: cert });
    kubeconfig = writeKubeconfig(dir, { server: `https://127.0.0.1:${httpsPort}`, caPem: cert.caPem, token: TOKEN });
  });
  after(async () => {
    await gateway.close();
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("create secret generic (protobuf), then jsonpath and the table", async () => {
    const r = await kubectl("create", "secret", "generic", "s", "--from-literal=password=hunter2", "-v=8");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /secret\/s created/);
    assert.match(r.stderr, /POST https:\/\/127\.0\.0\.1:\d+\/api\/v1\/namespaces\/default\/secrets/);
    assert.match(r.stderr, /Content-Type: application\/vnd\.kubernetes\.protobuf\n[\s\S]*Response Status: 201/);
    const b64 = await ok("get", "secret", "s", "-o", "jsonpath={.data.password}");
    assert.equal(Buffer.from(b64, "base64").toString(), "hunter2");
    assert.equal(await ok("get", "secret", "s", "-o", "jsonpath={.type}"), "Opaque");
  });

  it("create secret tls from an openssl certificate, and docker-registry", async () => {
    const crt = path.join(dir, "tls.crt");
    const key = path.join(dir, "tls.key");
    await exec("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=choreo.test", "-days", "1", "-keyout", key, "-out", crt]);
    assert.match(await ok("create", "secret", "tls", "t", `--cert=${crt}`, `--key=${key}`), /secret\/t created/);
    const tls = await dataOf("t");
    assert.deepEqual(Object.keys(tls).sort(), ["tls.crt", "tls.key"]);
    assert.match(tls["tls.crt"] ?? "", /^-----BEGIN CERTIFICATE-----/);
    assert.equal(await ok("get", "secret", "t", "-o", "jsonpath={.type}"), "kubernetes.io/tls");

    assert.match(
      await ok("create", "secret", "docker-registry", "d", "--docker-server=registry.example", "--docker-username=u", "--docker-password=p4ss"),
      /secret\/d created/,
    );
    const cfg = JSON.parse((await dataOf("d"))[".dockerconfigjson"] ?? "{}") as { auths: Record<string, { username: string; password: string }> };
    assert.equal(cfg.auths["registry.example"]?.password, "p4ss");
    assert.equal(await ok("get", "secret", "d", "-o", "jsonpath={.type}"), "kubernetes.io/dockerconfigjson");

    // kubectl's own checks aside, the api's: a tls secret without its key is a 422 naming the field.
    const bad = path.join(dir, "bad-tls.json");
    writeFileSync(
      bad,
      JSON.stringify({ apiVersion: "v1", kind: "Secret", metadata: { name: "bad" }, type: "kubernetes.io/tls", stringData: { "tls.crt": "x" } }),
    );
    const refused = await kubectl("create", "-f", bad);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /Secret "bad" is invalid: data\[tls\.key\]: Required value/);
  });

  it("kubectl get secrets prints NAME TYPE DATA AGE", async () => {
    const out = await ok("get", "secrets");
    const lines = out.trim().split("\n");
    assert.match(lines[0] ?? "", /^NAME\s+TYPE\s+DATA\s+AGE$/);
    const rows = Object.fromEntries(lines.slice(1).map((l) => [l.split(/\s+/)[0], l.split(/\s+/).slice(1, 3)]));
    assert.deepEqual(rows["s"], ["Opaque", "1"]);
    assert.deepEqual(rows["t"], ["kubernetes.io/tls", "2"]);
    assert.deepEqual(rows["d"], ["kubernetes.io/dockerconfigjson", "1"]);
    assert.doesNotMatch(out, /hunter2/);
  });

  it("apply with stringData: merged into data, never shown; a type change is refused", async () => {
    const file = path.join(dir, "applied.yaml");
    writeFileSync(file, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: applied\nstringData:\n  user: admin\n  password: s3cret\n");
    assert.match(await ok("apply", "-f", file), /secret\/applied created/);
    const got = JSON.parse(await ok("get", "secret", "applied", "-o", "json")) as Json;
    assert.equal(got["stringData"], undefined);
    assert.deepEqual(await dataOf("applied"), { password: "s3cret", user: "admin" });
    writeFileSync(file, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: applied\nstringData:\n  user: root\n");
    assert.match(await ok("apply", "-f", file), /secret\/applied configured/);
    assert.equal((await dataOf("applied"))["user"], "root");
    const patched = await kubectl("patch", "secret", "applied", "--type=merge", "-p", '{"type":"kubernetes.io/basic-auth"}');
    assert.notEqual(patched.code, 0);
    assert.match(patched.stderr, /type: Invalid value: "kubernetes\.io\/basic-auth": field is immutable/);
  });

  it("discovery and OpenAPI: api-resources lists secrets, explain knows stringData; kubectl 1.20 reads them too", async () => {
    const resources = await ok("api-resources", "--api-group=", "--namespaced=true");
    assert.match(resources, /^secrets\s+v1\s+true\s+Secret$/m);
    assert.match(await ok("explain", "secret.stringData"), /stringData/);
    const old = process.env["CHOREO_KUBECTL_120"] ?? "/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl";
    if (!existsSync(old)) return;
    const r = await exec(
      old,
      ["--kubeconfig", kubeconfig, "--cache-dir", path.join(dir, "cache-1.20"), "get", "secret", "s", "-o", "jsonpath={.data.password}"],
      { timeout: 30_000 },
    );
    assert.equal(Buffer.from(r.stdout, "base64").toString(), "hunter2");
  });

  it("create configmap still works beside them", async () => {
    assert.match(await ok("create", "configmap", "c", "--from-literal=a=b"), /configmap\/c created/);
    assert.equal(await ok("get", "configmap", "c", "-o", "jsonpath={.data.a}"), "b");
  });
});
