// kubectl's HPA columns (printHorizontalPodAutoscaler, formatHPAMetrics of 1.32).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { kindByResource } from "@choreo/kit";
import { toTable } from "./table.js";

const NOW = Date.parse("2026-01-01T12:00:00Z");

function cells(obj: Record<string, unknown>): Record<string, unknown> {
  const info = kindByResource("horizontalpodautoscalers");
  assert.ok(info);
  const t = toTable(info, [obj], { includeObject: "None", resourceVersion: "1", now: NOW });
  const cols = t["columnDefinitions"] as { name: string }[];
  const row = (t["rows"] as { cells: unknown[] }[])[0];
  assert.ok(row);
  return Object.fromEntries(cols.map((c, i) => [c.name, row.cells[i]]));
}

const meta = { name: "web", namespace: "default", creationTimestamp: "2026-01-01T11:00:00Z" };
const ref = { kind: "Deployment", name: "web", apiVersion: "apps/v1" };
const cpu = (target: Record<string, unknown>) => ({ type: "Resource", resource: { name: "cpu", target } });

describe("horizontalpodautoscalers table", () => {
  it("NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE, with the current utilization beside the target", () => {
    assert.deepEqual(
      cells({
        metadata: meta,
        spec: { scaleTargetRef: ref, minReplicas: 1, maxReplicas: 5, metrics: [cpu({ type: "Utilization", averageUtilization: 50 })] },
        status: {
          currentReplicas: 3,
          desiredReplicas: 3,
          currentMetrics: [{ type: "Resource", resource: { name: "cpu", current: { averageUtilization: 87, averageValue: "870m" } } }],
        },
      }),
      { Name: "web", Reference: "Deployment/web", Targets: "cpu: 87%/50%", MinPods: "1", MaxPods: 5, Replicas: 3, Age: "60m" },
    );
  });

  it("<unknown> before the first reading, <unset> without minReplicas, <none> without metrics", () => {
    const c = cells({
      metadata: meta,
      spec: { scaleTargetRef: ref, maxReplicas: 3, metrics: [cpu({ type: "Utilization", averageUtilization: 80 })] },
      status: {},
    });
    assert.deepEqual([c["Targets"], c["MinPods"], c["Replicas"]], ["cpu: <unknown>/80%", "<unset>", 0]);
    assert.equal(cells({ metadata: meta, spec: { scaleTargetRef: ref, maxReplicas: 3 } })["Targets"], "<none>");
  });

  it("average values, pods and external metrics, and at most two metrics then + N more...", () => {
    const c = cells({
      metadata: meta,
      spec: {
        scaleTargetRef: ref,
        maxReplicas: 3,
        metrics: [
          cpu({ type: "AverageValue", averageValue: "500m" }),
          { type: "Pods", pods: { metric: { name: "qps" }, target: { type: "AverageValue", averageValue: "10" } } },
          { type: "External", external: { metric: { name: "queue" }, target: { type: "Value", value: "30" } } },
        ],
      },
      status: { currentMetrics: [{ type: "Resource", resource: { name: "cpu", current: { averageValue: "250m" } } }] },
    });
    assert.equal(c["Targets"], "cpu: 250m/500m, <unknown>/10 + 1 more...");
  });
});
