// API Priority and Fairness on the HTTP gateway: a user whose priority level
// has no seat left gets 429 TooManyRequests with Retry-After, and real kubectl
// (client-go) waits that long and asks again; system:masters and watches never
// wait for a seat.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import * as k8s from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { Authenticator } from "../auth/authenticate.js";
import { parseTokenFile, StaticTokens } from "../auth/static-tokens.js";
import { FlowControl } from "../flowcontrol/flow-control.js";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import { startMemoryRegistry } from "../testing/memory-registry.js";
import { createGateway, type Gateway } from "./gateway.js";
import { ensureServingCert } from "./tls.js";
import { kubectlInstalled, kubectlRunner, writeKubeconfig } from "./testing/kubectl.js";

describe("flow control on the HTTP gateway", () => {
  let gateway: Gateway;
  let base: string;
  let httpsBase: string;
  let caPem: string;
  let metrics: Registry;
  let dir: string;
  /** GETs of the ConfigMap `slow` wait for this. */
  let release: () => void = () => undefined;
  let slowArrived: () => void = () => undefined;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "choreo-apf-"));
    const { registry } = await startMemoryRegistry();
    for (const name of ["slow", "fast"])
      await registry.create({
        object: fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data: { k: name } }),
        dryRun: false,
        fieldManager: "test",
      });
    // The registry with GETs of `slow` held until the test releases them: a request that keeps its seat.
    const handlers: ApiHandlers = Object.create(registry) as ApiHandlers;
    handlers.get = async (req) => {
      if (req.name === "slow") {
        slowArrived();
        await new Promise<void>((r) => (release = r));
      }
      return registry.get(req);
    };
    // The memory registry has no event log: a watch that ends at once (what is tested is that it is served at all).
    handlers.watch = async function* () {};
    metrics = new Registry();
    // One seat in all: global-default (alice) is guaranteed it, and nobody else may wait for it.
    const flowControl = new FlowControl({ concurrency: 1, maxWaitMs: 5_000, queueLimit: 0, registry: metrics });
    gateway = createGateway({
      handlers,
      log: silentLogger(),
      authentication: new Authenticator({ tokens: [new StaticTokens(parseTokenFile("admin-token\nalice-token,alice,a,\n"))] }),
      flowControl,
    });
    // kubectl sends its bearer token over https only.
    const cert = await ensureServingCert(dir, []);
    caPem = cert.caPem;
    const ports = await gateway.listen({ host: "127.0.0.1", httpPort: 0, httpsPort: 0, tls: cert });
    base = `http://127.0.0.1:${ports.httpPort}`;
    httpsBase = `https://127.0.0.1:${ports.httpsPort}`;
  });
  after(async () => {
    release();
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const get = (p: string, token: string): Promise<Response> => fetch(`${base}${p}`, { headers: { Authorization: `Bearer ${token}` } });
  /** Alice's GET of `slow`, holding global-default's only seat until released (its answer in an object: an async function returning the promise would wait for it). */
  const holdSeat = async (): Promise<{ answer: Promise<Response> }> => {
    const arrived = new Promise<void>((r) => (slowArrived = r));
    const answer = get("/api/v1/namespaces/default/configmaps/slow", "alice-token");
    await arrived;
    return { answer };
  };

  it("answers 429 TooManyRequests with Retry-After when the level has no seat, runs nothing, and serves system:masters and watches meanwhile", async () => {
    const held = await holdSeat();
    const refused = await get("/api/v1/namespaces/default/configmaps/fast", "alice-token");
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get("retry-after"), "1");
    const status = (await refused.json()) as { kind: string; reason: string; code: number; details?: { retryAfterSeconds?: number } };
    assert.equal(status.kind, "Status");
    assert.equal(status.reason, "TooManyRequests");
    assert.equal(status.details?.retryAfterSeconds, 1);
    // A write refused so changes nothing.
    const post = await fetch(`${base}/api/v1/namespaces/default/configmaps`, {
      method: "POST",
      headers: { Authorization: "Bearer alice-token", "Content-Type": "application/json" },
      body: JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "refused" } }),
    });
    assert.equal(post.status, 429);
    // system:masters is exempt; a watch is long-running and takes no seat.
    const admin = await get("/api/v1/namespaces/default/configmaps/refused", "admin-token");
    assert.equal(admin.status, 404, "the refused create stored nothing");
    const watch = await get("/api/v1/namespaces/default/configmaps?watch=1", "alice-token");
    assert.equal(watch.status, 200, await watch.text());
    release();
    assert.equal((await held.answer).status, 200);
    assert.equal((await get("/api/v1/namespaces/default/configmaps/fast", "alice-token")).status, 200, "the seat is free again");
    assert.match(await metrics.metrics(), /choreo_api_flowcontrol_rejected_requests_total\{priority_level="global-default",reason="queue-full"\} 2/);
  });

  it("@kubernetes/client-node reads the 429 as an ApiException with the TooManyRequests Status and Retry-After", async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(writeKubeconfig(dir, { server: httpsBase, caPem, token: "alice-token" }));
    const api = kc.makeApiClient(k8s.CoreV1Api);
    const held = await holdSeat();
    try {
      await api.readNamespacedConfigMap({ name: "fast", namespace: "default" });
      assert.fail("the read got a seat");
    } catch (err) {
      assert.ok(err instanceof k8s.ApiException, `an ApiException, not ${String(err)}`);
      const e = err as k8s.ApiException<unknown>;
      assert.equal(e.code, 429);
      assert.equal(e.headers["retry-after"], "1");
      const body = (typeof e.body === "string" ? JSON.parse(e.body) : e.body) as { kind: string; reason: string; details?: { retryAfterSeconds?: number } };
      assert.equal(body.kind, "Status");
      assert.equal(body.reason, "TooManyRequests");
      assert.equal(body.details?.retryAfterSeconds, 1);
    } finally {
      release();
      await held.answer;
    }
  });

  it("the official Python client raises ApiException(429) with the Status and Retry-After (it does not retry, as against kube-apiserver)", async (t) => {
    if (!existsSync("/usr/bin/python3")) return t.skip("python3 is not installed");
    const kubeconfig = writeKubeconfig(dir, { server: httpsBase, caPem, token: "alice-token" });
    const script = [
      "import json, sys",
      "from kubernetes import client, config",
      "from kubernetes.client.rest import ApiException",
      "config.load_kube_config(config_file=sys.argv[1])",
      "try:",
      "    client.CoreV1Api().read_namespaced_config_map('fast', 'default')",
      "    print(json.dumps({'accepted': True}))",
      "except ApiException as e:",
      "    print(json.dumps({'status': e.status, 'retryAfter': e.headers.get('Retry-After'), 'body': json.loads(e.body)}))",
    ].join("\n");
    const held = await holdSeat();
    try {
      const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
        execFile("/usr/bin/python3", ["-c", script, kubeconfig], { timeout: 60_000 }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr })),
      );
      if (/No module named 'kubernetes'/.test(r.stderr)) return t.skip("python3-kubernetes is not installed");
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout) as { status?: number; retryAfter?: string; body?: { kind: string; reason: string } };
      assert.equal(out.status, 429, r.stdout);
      assert.equal(out.retryAfter, "1");
      assert.equal(out.body?.kind, "Status");
      assert.equal(out.body?.reason, "TooManyRequests");
    } finally {
      release();
      await held.answer;
    }
  });

  for (const [version, bin] of [
    ["1.32", "kubectl"],
    ["1.20", process.env["CHOREO_KUBECTL_120"] ?? "/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl"],
  ] as const)
    it(`kubectl ${version} waits the Retry-After and asks again until it gets a seat`, async (t) => {
      if (!(await kubectlInstalled(bin))) return t.skip(`kubectl ${version} is not installed`);
      const kubectl = kubectlRunner(dir, writeKubeconfig(dir, { server: httpsBase, caPem, token: "alice-token" }), { bin, requestTimeoutSeconds: 20 });
      const refusedBefore = rejected(await metrics.metrics());
      const held = await holdSeat();
      const run = kubectl("get", "configmap", "fast", "-o", "jsonpath={.data.k}");
      // Released only once kubectl has been refused at least once: its success is its retry's.
      while (rejected(await metrics.metrics()) === refusedBefore) await new Promise((r) => setTimeout(r, 50));
      release();
      assert.equal((await held.answer).status, 200);
      const r = await run;
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, "fast");
    });
});

function rejected(text: string): number {
  return Number(/choreo_api_flowcontrol_rejected_requests_total\{priority_level="global-default",reason="queue-full"\} (\d+)/.exec(text)?.[1] ?? 0);
}
