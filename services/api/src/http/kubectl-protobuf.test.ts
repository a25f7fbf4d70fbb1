// test-tier: servers
// Real kubectl 1.32 speaking protobuf to the gateway (its typed commands send
// and accept application/vnd.kubernetes.protobuf): each object created through
// protobuf reads back in JSON as its twin created through JSON does.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { createGateway, type Gateway } from "./gateway.js";
import { until } from "./testing/harness.js";
import { MemoryHandlers } from "./testing/memory-handlers.js";
import { ensureServingCert } from "./tls.js";
import { kubectlInstalled, kubectlRunner, writeKubeconfig } from "./testing/kubectl.js";

const hasKubectl = await kubectlInstalled();

type Json = Record<string, unknown>;

/** An object as read back, without what the server assigns (and the name, which differs between twins). */
function comparable(o: Json): Json {
  const { name: _n, uid: _u, resourceVersion: _r, creationTimestamp: _c, ...meta } = o["metadata"] as Json;
  const labels = meta["labels"] as Record<string, string> | undefined;
  const out: Json = { ...o, metadata: meta };
  // `kubectl create service/job` label and select by the object's own name.
  if (labels) meta["labels"] = Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, v.replace(/-json$/, "")]));
  return JSON.parse(JSON.stringify(out).replaceAll('-json"', '"')) as Json;
}

describe("kubectl over protobuf", { skip: hasKubectl ? false : "kubectl not on PATH" }, () => {
  let dir: string;
  let gateway: Gateway;
  let handlers: MemoryHandlers;
  let kubeconfig: string;
  const TOKEN = "kubectl-protobuf-token";

  const kubectl = (...args: string[]) => kubectlRunner(dir, kubeconfig)(...args);
  const ok = async (...args: string[]): Promise<string> => {
    const r = await kubectl(...args);
    assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };
  const getJson = async (...args: string[]): Promise<Json> => JSON.parse(await ok("get", ...args, "-o", "json")) as Json;

  /**
   * Runs a typed `kubectl create …` (protobuf), then creates its twin NAME-json
   * from the same command's client-side JSON through `kubectl create -f`
   * (unstructured: JSON), and compares both as read back.
   */
  const twins = async (resource: string, name: string, create: (n: string, flags: string[]) => string[]): Promise<Json> => {
    const out = await ok(...create(name, ["-v=8"]));
    assert.match(out, new RegExp(`${name}`));
    const manifest = JSON.parse(await ok(...create(`${name}-json`, ["--dry-run=client", "-o", "json"]))) as Json;
    const file = path.join(dir, `${name}-json.json`);
    writeFileSync(file, JSON.stringify(manifest));
    await ok("create", "-f", file);
    const viaProtobuf = await getJson(resource, name);
    const viaJson = await getJson(resource, `${name}-json`);
    assert.deepEqual(comparable(viaProtobuf), comparable(viaJson));
    return viaProtobuf;
  };

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "choreo-kubectl-pb-"));
    const cert = await ensureServingCert(dir, []);
    handlers = new MemoryHandlers();
    handlers.seed({ apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } });
    gateway = createGateway({ handlers, log: silentLogger(), tokens: [TOKEN] });
    const { httpsPort } = await gateway.listen({ host: "127.0.0.1", httpsPort: 0, tls: cert });
    kubeconfig = writeKubeconfig(dir, { server: `https://127.0.0.1:${httpsPort}`, caPem: cert.caPem, token: TOKEN });
  });
  after(async () => {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("create namespace sends and reads protobuf", async () => {
    const r = await kubectl("create", "namespace", "x", "-v=8");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /namespace\/x created/);
    // Request body and response body both in protobuf.
    assert.match(r.stderr, /POST https:\/\/127\.0\.0\.1:\d+\/api\/v1\/namespaces/);
    assert.match(
      r.stderr,
      /Content-Type: application\/vnd\.kubernetes\.protobuf\n[\s\S]*Response Status: 201[\s\S]*Content-Type: application\/vnd\.kubernetes\.protobuf/,
    );
    const ns = await getJson("namespace", "x");
    assert.equal((ns["metadata"] as Json)["name"], "x");
  });

  it("create namespace, configmap, service, job: each reads back as its JSON twin", async () => {
    await twins("namespace", "y", (n, f) => ["create", "namespace", n, ...f]);
    const cm = await twins("configmap", "c", (n, f) => ["create", "configmap", n, "--from-literal=a=b", "--from-literal=multi=x\ny", ...f]);
    assert.deepEqual(cm["data"], { a: "b", multi: "x\ny" });
    const svc = await twins("service", "s", (n, f) => ["create", "service", "clusterip", n, "--tcp=80:8080", "--tcp=81:http", ...f]);
    assert.deepEqual(
      ((svc["spec"] as Json)["ports"] as Json[]).map((p) => p["targetPort"]),
      [8080, "http"],
    );
    const job = await twins("job", "j", (n, f) => ["create", "job", n, "--image=busybox", ...f, "--", "echo", "hi"]);
    assert.deepEqual(((((job["spec"] as Json)["template"] as Json)["spec"] as Json)["containers"] as Json[])[0]!["command"], ["echo", "hi"]);
  });

  it("run and expose", async () => {
    const pod = await twins("pod", "web", (n, f) => ["run", n, "--image=nginx", "--port=80", "--labels=app=web", "--env=A=1", ...f]);
    const c = ((pod["spec"] as Json)["containers"] as Json[])[0]!;
    assert.deepEqual(c["env"], [{ name: "A", value: "1" }]);
    assert.deepEqual(c["ports"], [{ containerPort: 80 }]);
    assert.match(await ok("expose", "pod", "web", "--port=81", "--target-port=80", "--name=webs"), /service\/webs exposed/);
    const svc = await getJson("service", "webs");
    assert.deepEqual((svc["spec"] as Json)["selector"], { app: "web" });
    assert.deepEqual(((svc["spec"] as Json)["ports"] as Json[])[0], { port: 81, protocol: "TCP", targetPort: 80 });
  });

  it("kubectl events -w reads a protobuf list and a protobuf watch", async () => {
    const ev = (name: string, message: string) => ({
      apiVersion: "v1",
      kind: "Event",
      metadata: { name, namespace: "default" },
      involvedObject: { kind: "Pod", name: "web", namespace: "default" },
      reason: "Started",
      message,
      type: "Normal",
      count: 1,
      firstTimestamp: "2024-05-01T10:00:00Z",
      lastTimestamp: "2024-05-01T10:00:00Z",
    });
    writeFileSync(path.join(dir, "e1.json"), JSON.stringify(ev("e1", "listed-message")));
    writeFileSync(path.join(dir, "e2.json"), JSON.stringify(ev("e2", "watched-message")));
    await ok("create", "-f", path.join(dir, "e1.json"));
    const child = spawn("kubectl", ["--kubeconfig", kubeconfig, "--cache-dir", path.join(dir, "cache"), "events", "-w", "-v=8"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    try {
      await until(() => stdout.includes("listed-message") && /watch=true/.test(stderr), 15000, "the listed event and the watch request");
      await ok("create", "-f", path.join(dir, "e2.json"));
      await until(() => stdout.includes("watched-message"), 15000, "the watched event");
      assert.match(stderr, /Content-Type: application\/vnd\.kubernetes\.protobuf;stream=watch/);
    } finally {
      child.kill();
    }
  });
});
