// test-tier: servers
// The HorizontalPodAutoscaler on real pods (process runtime) with kubectl
// 1.32: a Deployment whose pods burn CPU (a 200m limit over a 100m request:
// about 200 % utilization) under `kubectl autoscale --cpu-percent=50 --min=1
// --max=3` scales up to 3 — usage read by the node agents from cgroups,
// served by the Metrics API, the replicas computed by the replication actor —
// and, once the load stops (kubectl set env rolls idle pods), back down to 1
// after the 15 s scale-down window its behavior sets. kubectl get hpa and
// describe hpa show the target, the conditions and the SuccessfulRescale
// Events; a bad HPA is refused with 422 and nothing is stored.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import type { Deployment } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { HorizontalPodAutoscaler } from "@choreo/kit/gen/choreo/autoscaling/v2/autoscaling";
import { waitFor } from "@choreo/kit/testing";
import { withLogsOnFailure } from "./support/cluster.js";
import { run } from "./support/kubectl.js";
import { startRealCluster, type RealCluster } from "./support/real-cluster.js";

const WAIT = { timeoutMs: 300_000, intervalMs: 2_000 };
const IMAGE = "local/busybox:1.35";

describe("HorizontalPodAutoscaler: CPU utilization of real pods scales a Deployment up and down", () => {
  let c: RealCluster;
  const kubectl = (...args: string[]) => run("kubectl", args, c.kubeconfig);
  const hpa = async (): Promise<HorizontalPodAutoscaler> =>
    unwrap(await c.client.get("horizontalpodautoscalers", "default", "burn")) as HorizontalPodAutoscaler;
  const replicas = async (): Promise<number> => (unwrap(await c.client.get("deployments", "default", "burn")) as Deployment).spec?.replicas ?? -1;

  before(async () => {
    c = await startRealCluster("process", { nodes: 1 });
    await withLogsOnFailure(c, async () => {
      const manifest = c.manifest(
        "burn.yaml",
        `apiVersion: apps/v1
kind: Deployment
metadata:
  name: burn
spec:
  replicas: 1
  selector: {matchLabels: {app: burn}}
  template:
    metadata:
      labels: {app: burn}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: burner
        image: ${IMAGE}
        env: [{name: LOAD, value: "on"}]
        command: ["sh", "-c", "if [ \\"$LOAD\\" = on ]; then while :; do :; done; else sleep 3600; fi"]
        resources:
          requests: {cpu: 100m}
          limits: {cpu: 200m}
`,
      );
      const r = await kubectl("apply", "-f", manifest);
      assert.equal(r.code, 0, r.stderr);
    });
  });

  after(async () => {
    await c?.stop();
  });

  it("kubectl autoscale creates an autoscaling/v2 HPA with Kubernetes' defaults; a bad one is 422 and not stored", async () => {
    await withLogsOnFailure(c, async () => {
      // kubectl checks --min/--max itself; the server's validation answers a manifest.
      const badYaml = c.manifest(
        "bad-hpa.yaml",
        `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: bad}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: burn}
  minReplicas: 4
  maxReplicas: 2
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 0}}
`,
      );
      const bad = await kubectl("create", "-f", badYaml);
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /spec\.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`/);
      assert.match(bad.stderr, /spec\.metrics\[0\]\.resource\.target\.averageUtilization: Invalid value: 0: must be greater than 0/);
      assert.match((await kubectl("get", "hpa", "bad")).stderr, /NotFound/);

      const r = await kubectl("autoscale", "deployment", "burn", "--cpu-percent=50", "--min=1", "--max=3");
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /horizontalpodautoscaler\.autoscaling\/burn autoscaled/);
      // A short scale-down window keeps the test fast (the default is 300 s).
      const p = await kubectl(
        "patch",
        "hpa",
        "burn",
        "--type=merge",
        "-p",
        JSON.stringify({ spec: { behavior: { scaleDown: { stabilizationWindowSeconds: 15 } } } }),
      );
      assert.equal(p.code, 0, p.stderr);
      const h = await hpa();
      assert.deepEqual([h.apiVersion || "autoscaling/v2", h.spec?.minReplicas, h.spec?.maxReplicas], ["autoscaling/v2", 1, 3]);
      assert.deepEqual(h.spec?.scaleTargetRef, { kind: "Deployment", name: "burn", apiVersion: "apps/v1" });
      assert.equal(h.spec?.metrics[0]?.resource?.target?.averageUtilization, 50);
      assert.equal(h.spec?.behavior?.scaleDown?.stabilizationWindowSeconds, 15);
      assert.equal(h.spec?.behavior?.scaleUp?.policies.length, 2, "the scale-up rules completed with the defaults");
    });
  });

  it("scales up to maxReplicas under load: kubectl get hpa shows the utilization above the target, describe the Events", async () => {
    await withLogsOnFailure(c, async () => {
      await waitFor(async () => (await replicas()) === 3, { ...WAIT, message: "the HPA scaled burn to 3" });
      await waitFor(async () => (await hpa()).status?.currentReplicas === 3, { ...WAIT, message: "status.currentReplicas 3" });
      const get = await kubectl("get", "hpa", "burn", "--no-headers");
      assert.equal(get.code, 0, get.stderr);
      // NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE, TARGETS as kubectl 1.32 prints it: "cpu: <current>%/<target>%".
      const row = /^burn\s+Deployment\/burn\s+cpu: (\d+)%\/50%\s+1\s+3\s+3\s+\S+$/.exec(get.stdout.trim());
      assert.ok(row, `kubectl get hpa: ${get.stdout}`);
      assert.ok(Number(row[1]) > 50, `utilization above the target: ${get.stdout}`);
      const d = await kubectl("describe", "hpa", "burn");
      assert.equal(d.code, 0, d.stderr);
      assert.match(d.stdout, /Reference:\s+Deployment\/burn/);
      assert.match(d.stdout, /Min replicas:\s+1/);
      assert.match(d.stdout, /Max replicas:\s+3/);
      assert.match(d.stdout, /AbleToScale\s+True/);
      assert.match(d.stdout, /ScalingActive\s+True\s+ValidMetricFound/);
      assert.match(d.stdout, /SuccessfulRescale\s+.*New size: \d; reason: cpu resource utilization \(percentage of request\) above target/);
    });
  });

  it("scales back down to 1 once the load stops, after the 15 s window", async () => {
    await withLogsOnFailure(c, async () => {
      const r = await kubectl("set", "env", "deployment/burn", "LOAD=off");
      assert.equal(r.code, 0, r.stderr);
      await waitFor(async () => (await replicas()) === 1, { ...WAIT, message: "the HPA scaled burn back to 1" });
      await waitFor(async () => (await kubectl("describe", "hpa", "burn")).stdout.includes("All metrics below target"), {
        ...WAIT,
        message: "the scale-down Event",
      });
      const h = await hpa();
      assert.ok(h.status?.lastScaleTime, "lastScaleTime set");
      assert.equal(h.status?.desiredReplicas, 1);
    });
  });
});
