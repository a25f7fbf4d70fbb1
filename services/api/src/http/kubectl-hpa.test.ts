// test-tier: servers
// Real kubectl 1.32 and HorizontalPodAutoscalers through the gateway over the
// real registry: `kubectl autoscale` (autoscaling/v1 in protobuf, converted to
// the stored autoscaling/v2), get (the TARGETS column), describe, -o yaml as
// autoscaling/v2 with Kubernetes' defaults, explain, and a bad HPA refused
// with 422 naming the fields.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { startStack, type Stack } from "../testing/stack.js";
import { createGateway, type Gateway } from "./gateway.js";
import { ensureServingCert } from "./tls.js";
import { kubectlInstalled, kubectlRunner, writeKubeconfig } from "./testing/kubectl.js";

const hasKubectl = await kubectlInstalled();
const KUBECTL_120 = "/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl";
type Json = Record<string, unknown>;

describe("kubectl and horizontalpodautoscalers", { skip: hasKubectl ? false : "kubectl not on PATH" }, () => {
  let dir: string;
  let stack: Stack;
  let gateway: Gateway;
  let kubeconfig: string;
  const TOKEN = "kubectl-hpa-token";

  const kubectl = (...args: string[]) => kubectlRunner(dir, kubeconfig, { requestTimeoutSeconds: 20 })(...args);
  const ok = async (...args: string[]): Promise<string> => {
    const r = await kubectl(...args);
    assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "choreo-kubectl-hpa-"));
    stack = await startStack();
    const cert = await ensureServingCert(dir, []);
    gateway = createGateway({ handlers: stack.registry, log: silentLogger(), tokens: [TOKEN] });
    const { httpsPort } = await gateway.listen({ host: "127.0.0.1", httpsPort: 0, tls: cert });
    kubeconfig = writeKubeconfig(dir, { server: `https://127.0.0.1:${httpsPort}`, caPem: cert.caPem, token: TOKEN });
    await ok("create", "deployment", "web", "--image=nginx", "--replicas=2");
  });
  after(async () => {
    await gateway.close();
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("kubectl autoscale deployment web --cpu-percent=50 --min=1 --max=5 (autoscaling/v1, protobuf)", async () => {
    const r = await kubectl("autoscale", "deployment", "web", "--cpu-percent=50", "--min=1", "--max=5", "-v=8");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /horizontalpodautoscaler\.autoscaling\/web autoscaled/);
    assert.match(r.stderr, /POST https:\/\/127\.0\.0\.1:\d+\/apis\/autoscaling\/v1\/namespaces\/default\/horizontalpodautoscalers/);
    const hpa = JSON.parse(await ok("get", "hpa", "web", "-o", "json")) as Json;
    assert.equal(hpa["apiVersion"], "autoscaling/v2");
    assert.deepEqual(hpa["spec"], {
      scaleTargetRef: { kind: "Deployment", name: "web", apiVersion: "apps/v1" },
      minReplicas: 1,
      maxReplicas: 5,
      metrics: [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } } }],
    });
    // Again: AlreadyExists, as Kubernetes'.
    const again = await kubectl("autoscale", "deployment", "web", "--cpu-percent=50", "--max=5");
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /AlreadyExists|already exists/);
  });

  it("get hpa: NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE; describe; explain", async () => {
    const table = await ok("get", "hpa");
    assert.match(table, /^NAME\s+REFERENCE\s+TARGETS\s+MINPODS\s+MAXPODS\s+REPLICAS\s+AGE\n/);
    assert.match(table, /\nweb\s+Deployment\/web\s+cpu: <unknown>\/50%\s+1\s+5\s+0\s+\S+\n/);
    const d = await ok("describe", "hpa", "web");
    assert.match(d, /Name:\s+web/);
    assert.match(d, /Reference:\s+Deployment\/web/);
    assert.match(d, /Min replicas:\s+1/);
    assert.match(d, /Max replicas:\s+5/);
    const explain = await ok("explain", "hpa.spec.behavior.scaleDown");
    assert.match(explain, /stabilizationWindowSeconds/);
    const resources = await ok("api-resources", "--api-group=autoscaling");
    assert.match(resources, /horizontalpodautoscalers\s+hpa\s+autoscaling\/v2\s+true\s+HorizontalPodAutoscaler/);
  });

  it(
    "kubectl 1.20: get hpa (the server's table) and describe hpa (autoscaling/v2beta2 is not served: it falls back to the v1 get)",
    { skip: existsSync(KUBECTL_120) ? false : "kubectl 1.20 is not installed" },
    async () => {
      const old = kubectlRunner(dir, kubeconfig, { bin: KUBECTL_120, requestTimeoutSeconds: 20 });
      const get = await old("get", "hpa", "web");
      assert.equal(get.code, 0, get.stderr);
      assert.match(get.stdout, /\nweb\s+Deployment\/web\s+cpu: <unknown>\/50%\s+1\s+5\s+0\s+/);
      const d = await old("describe", "hpa", "web");
      assert.equal(d.code, 0, d.stderr);
      assert.match(d.stdout, /Reference:\s+Deployment\/web/);
      assert.match(d.stdout, /Target CPU utilization:\s+50%/);
      assert.match(d.stdout, /Min replicas:\s+1\nMax replicas:\s+5/);
    },
  );

  it("a bad HPA is refused with 422 naming the fields; nothing is stored", async () => {
    const file = path.join(dir, "bad.yaml");
    writeFileSync(
      file,
      `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: bad}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 3
  maxReplicas: 2
  behavior:
    scaleUp:
      policies: [{type: Pods, value: 0, periodSeconds: 15}]
`,
    );
    const r = await kubectl("create", "-f", file);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /HorizontalPodAutoscaler(?:\.autoscaling)? "bad" is invalid/);
    assert.match(r.stderr, /spec\.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`/);
    assert.match(r.stderr, /spec\.behavior\.scaleUp\.policies\[0\]\.value: Invalid value: 0: must be greater than zero/);
    assert.match((await kubectl("get", "hpa", "bad")).stderr, /NotFound/);
  });
});
