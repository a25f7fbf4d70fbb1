import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { isNotFound } from "@choreo/kit";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { rejects } from "../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";

const hpa = (name: string, spec: Record<string, unknown>) =>
  fromKubeJson({
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name, namespace: "default" },
    spec: { scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" }, maxReplicas: 5, ...spec },
  });
const cpu = (target: Record<string, unknown>) => ({ type: "Resource", resource: { name: "cpu", target } });

type Json = Record<string, unknown>;

describe("horizontalpodautoscalers", () => {
  // On the in-memory storage: defaults and validation are the strategy's.
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  async function stored(name: string): Promise<boolean> {
    try {
      await s.client.get("horizontalpodautoscalers", "default", name);
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }
  const specOf = async (name: string): Promise<Json> => toKubeJson(await s.client.get("horizontalpodautoscalers", "default", name))["spec"] as Json;

  it("fills Kubernetes' defaults: minReplicas 1, 80 % CPU, no behavior unless one is given", async () => {
    await s.client.create(hpa("defaults", {}));
    const spec = await specOf("defaults");
    assert.equal(spec["minReplicas"], 1);
    assert.deepEqual(spec["metrics"], [cpu({ type: "Utilization", averageUtilization: 80 })]);
    assert.equal(spec["behavior"], undefined);
  });

  it("completes a given behavior with the default rules (up: 0 s, 4 pods and 100 % per 15 s, Max; down: 100 % per 15 s, Max)", async () => {
    await s.client.create(hpa("behavior", { behavior: { scaleDown: { stabilizationWindowSeconds: 10 } } }));
    const b = (await specOf("behavior"))["behavior"] as Json;
    assert.deepEqual(b["scaleUp"], {
      stabilizationWindowSeconds: 0,
      selectPolicy: "Max",
      policies: [
        { type: "Pods", value: 4, periodSeconds: 15 },
        { type: "Percent", value: 100, periodSeconds: 15 },
      ],
    });
    assert.deepEqual(b["scaleDown"], { stabilizationWindowSeconds: 10, selectPolicy: "Max", policies: [{ type: "Percent", value: 100, periodSeconds: 15 }] });
  });

  it("drops a status given on create", async () => {
    await s.client.create(fromKubeJson({ ...toKubeJson(hpa("with-status", {})), status: { currentReplicas: 7, desiredReplicas: 7 } }));
    const st = toKubeJson(await s.client.get("horizontalpodautoscalers", "default", "with-status"))["status"] as Json;
    assert.equal(st["currentReplicas"], undefined);
    assert.equal(st["desiredReplicas"], 0);
  });

  it("refuses bad replicas and target with 422 naming the fields, and stores nothing", async () => {
    await rejects(
      s.client.create(hpa("min-over-max", { minReplicas: 4, maxReplicas: 2 })),
      422,
      "Invalid",
      /^HorizontalPodAutoscaler(?:\.autoscaling)? "min-over-max" is invalid: spec\.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`$/,
    );
    await rejects(
      s.client.create(hpa("min-zero", { minReplicas: 0 })),
      422,
      "Invalid",
      /spec\.minReplicas: Invalid value: 0: must be greater than or equal to 1/,
    );
    await rejects(
      s.client.create(hpa("max-zero", { maxReplicas: 0, minReplicas: undefined })),
      422,
      "Invalid",
      /spec\.maxReplicas: Invalid value: 0: must be greater than 0/,
    );
    await rejects(
      s.client.create(hpa("no-target", { scaleTargetRef: { kind: "", name: "a/b" } })),
      422,
      "Invalid",
      /spec\.scaleTargetRef\.kind: Required value, spec\.scaleTargetRef\.name: Invalid value: "a\/b": may not contain '\/'/,
    );
    for (const n of ["min-over-max", "min-zero", "max-zero", "no-target"]) assert.equal(await stored(n), false, n);
  });

  it("refuses malformed metrics as Kubernetes' validateMetricSpec does", async () => {
    await rejects(
      s.client.create(hpa("no-target-value", { metrics: [cpu({ type: "Utilization" })] })),
      422,
      "Invalid",
      /spec\.metrics\[0\]\.resource\.target\.averageUtilization: Required value: must set either a target raw value or a target utilization/,
    );
    await rejects(
      s.client.create(hpa("zero-utilization", { metrics: [cpu({ type: "Utilization", averageUtilization: 0 })] })),
      422,
      "Invalid",
      /spec\.metrics\[0\]\.resource\.target\.averageUtilization: Invalid value: 0: must be greater than 0/,
    );
    await rejects(
      s.client.create(hpa("both", { metrics: [cpu({ type: "Utilization", averageUtilization: 50, averageValue: "100m" })] })),
      422,
      "Invalid",
      /spec\.metrics\[0\]\.resource\.target\.averageValue: Forbidden: may not set both a target raw value and a target utilization/,
    );
    await rejects(
      s.client.create(
        hpa("wrong-type", { metrics: [{ type: "Resource", pods: { metric: { name: "qps" }, target: { type: "AverageValue", averageValue: "1" } } }] }),
      ),
      422,
      "Invalid",
      /spec\.metrics\[0\]\.resource: Required value: must populate information for the given metric source/,
    );
    await rejects(
      s.client.create(hpa("unknown-type", { metrics: [{ type: "Magic" }] })),
      422,
      "Invalid",
      /spec\.metrics\[0\]\.type: Unsupported value: "Magic": supported values: "ContainerResource", "External", "Object", "Pods", "Resource"/,
    );
    await rejects(
      s.client.create(hpa("target-type", { metrics: [cpu({ type: "Percent", averageUtilization: 50 })] })),
      422,
      "Invalid",
      /spec\.metrics\[0\]\.resource\.target\.type: Invalid value: "Percent": must be either Utilization, Value, or AverageValue/,
    );
    await rejects(
      s.client.create(hpa("negative-value", { metrics: [cpu({ type: "AverageValue", averageValue: "-1" })] })),
      422,
      "Invalid",
      /spec\.metrics\[0\]\.resource\.target\.averageValue: Invalid value: "-1": must be positive/,
    );
    for (const n of ["no-target-value", "zero-utilization", "both", "wrong-type", "unknown-type", "target-type", "negative-value"])
      assert.equal(await stored(n), false, n);
  });

  it("refuses bad scaling rules: windows, policies, selectPolicy", async () => {
    await rejects(
      s.client.create(
        hpa("rules", {
          behavior: {
            scaleUp: { stabilizationWindowSeconds: 3601, selectPolicy: "Most", policies: [{ type: "Nodes", value: 0, periodSeconds: 1801 }] },
            scaleDown: { stabilizationWindowSeconds: -1 },
          },
        }),
      ),
      422,
      "Invalid",
      new RegExp(
        [
          "spec\\.behavior\\.scaleUp\\.stabilizationWindowSeconds: Invalid value: 3601: must be less than or equal to 3600",
          'spec\\.behavior\\.scaleUp\\.selectPolicy: Unsupported value: "Most": supported values: "Disabled", "Max", "Min"',
          'spec\\.behavior\\.scaleUp\\.policies\\[0\\]\\.type: Unsupported value: "Nodes": supported values: "Percent", "Pods"',
          "spec\\.behavior\\.scaleUp\\.policies\\[0\\]\\.value: Invalid value: 0: must be greater than zero",
          "spec\\.behavior\\.scaleUp\\.policies\\[0\\]\\.periodSeconds: Invalid value: 1801: must be less than or equal to 1800",
          "spec\\.behavior\\.scaleDown\\.stabilizationWindowSeconds: Invalid value: -1: must be greater than or equal to zero",
        ].join(", "),
      ),
    );
    assert.equal(await stored("rules"), false);
  });

  it("an update is validated too (the stored spec stays), and a spec change is a new generation", async () => {
    await s.client.create(hpa("update-me", {}));
    const got = toKubeJson(await s.client.get("horizontalpodautoscalers", "default", "update-me"));
    const spec = got["spec"] as Json;
    await rejects(s.client.update(fromKubeJson({ ...got, spec: { ...spec, maxReplicas: 0 } })), 422, "Invalid", /spec\.maxReplicas/);
    assert.equal((await specOf("update-me"))["maxReplicas"], 5);
    const updated = toKubeJson(await s.client.update(fromKubeJson({ ...got, spec: { ...spec, maxReplicas: 9 } })));
    assert.equal((updated["metadata"] as Json)["generation"], 2);
  });
});
