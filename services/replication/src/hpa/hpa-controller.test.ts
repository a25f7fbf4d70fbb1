// The HPA controller against fakes: an informer stand-in for HPAs and pods,
// a client whose scale subresource and Metrics API answer from memory, and a
// fake clock. What it writes: the scale, the status and its conditions, the
// Events.
import assert from "node:assert/strict";
import { beforeEach, describe, it } from "node:test";
import { unwrap, type ApiObject } from "@choreo/kit";
import type { Scale } from "@choreo/kit/gen/choreo/autoscaling/v1/autoscaling";
import type { HorizontalPodAutoscaler, HorizontalPodAutoscalerStatus } from "@choreo/kit/gen/choreo/autoscaling/v2/autoscaling";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { PodMetricsList } from "@choreo/kit/gen/choreo/metrics/v1beta1/metrics";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { FakeCache } from "../testing.js";
import { HpaController, goDurationMs } from "./hpa-controller.js";
import { podCacheTransform } from "../pod-cache.js";

const T0 = Date.parse("2026-11-26T01:00:00Z");
const LONG_AGO = "2026-11-26T00:00:00Z";

function hpa(spec: Record<string, unknown> = {}): HorizontalPodAutoscaler {
  return unwrap(
    fromKubeJson({
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "web", namespace: "default", uid: "uid-hpa", generation: 1, resourceVersion: "5" },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        minReplicas: 1,
        maxReplicas: 10,
        metrics: [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } } }],
        ...spec,
      },
    }),
  ) as HorizontalPodAutoscaler;
}

function pod(name: string, requestMilli = 1000): Pod {
  return unwrap(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: "default", uid: `uid-${name}`, labels: { app: "web" } },
      spec: { containers: [{ name: "app", image: "busybox", resources: { requests: { cpu: `${requestMilli}m` } } }] },
      status: { phase: "Running", startTime: LONG_AGO, conditions: [{ type: "Ready", status: "True", lastTransitionTime: LONG_AGO }] },
    }),
  ) as Pod;
}

/** The scale subresource, the Metrics API and the status writes, in memory. */
class FakeApi {
  replicas = 2;
  selector = "app=web";
  usage = new Map<string, number>();
  now = T0;
  readonly scales: number[] = [];
  readonly statuses: HorizontalPodAutoscalerStatus[] = [];
  failScale?: Error;

  targets: string[] = [];
  getScale(resource: string, namespace: string, name: string): Promise<Scale> {
    this.targets.push(resource);
    if (!["deployments", "replicasets", "replicationcontrollers"].includes(resource) || namespace !== "default" || name !== "web")
      return Promise.reject(new Error(`deployments.apps "${name}" not found`));
    return Promise.resolve({
      apiVersion: "autoscaling/v1",
      kind: "Scale",
      metadata: undefined,
      spec: { replicas: this.replicas },
      status: { replicas: this.replicas, selector: this.selector },
    });
  }
  updateScale(_r: string, _ns: string, _n: string, replicas: number): Promise<Scale> {
    if (this.failScale) return Promise.reject(this.failScale);
    this.scales.push(replicas);
    this.replicas = replicas;
    return Promise.resolve({
      apiVersion: "autoscaling/v1",
      kind: "Scale",
      metadata: undefined,
      spec: { replicas },
      status: { replicas, selector: this.selector },
    });
  }
  updateStatus(o: ApiObject): Promise<ApiObject> {
    this.statuses.push(structuredClone((unwrap(o) as HorizontalPodAutoscaler).status as HorizontalPodAutoscalerStatus));
    return Promise.resolve(o);
  }
  podMetrics(): Promise<PodMetricsList> {
    const ts = new Date(this.now - 5_000).toISOString();
    return Promise.resolve({
      apiVersion: "metrics.k8s.io/v1beta1",
      kind: "PodMetricsList",
      metadata: undefined,
      items: [...this.usage].map(([name, milli]) => ({
        apiVersion: "metrics.k8s.io/v1beta1",
        kind: "PodMetrics",
        metadata: unwrap(fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "default" } })).metadata,
        timestamp: ts,
        window: "15.002s",
        containers: [{ name: "app", usage: { cpu: `${milli}m`, memory: "10Mi" } }],
      })),
    });
  }
}

describe("HpaController", () => {
  let api: FakeApi;
  let hpas: FakeCache<HorizontalPodAutoscaler>;
  let pods: FakeCache<Pod>;
  let events: string[];
  let c: HpaController;

  beforeEach(() => {
    api = new FakeApi();
    hpas = new FakeCache<HorizontalPodAutoscaler>();
    pods = new FakeCache<Pod>(podCacheTransform());
    events = [];
    c = new HpaController({
      client: api,
      metrics: api,
      hpas,
      pods,
      recorder: { emit: (_ref, type, reason, message) => events.push(`${type} ${reason} ${message}`) },
      log: silentLogger(),
      now: () => api.now,
    });
  });

  const last = (): HorizontalPodAutoscalerStatus => {
    const s = api.statuses.at(-1);
    assert.ok(s, "a status was written");
    return s;
  };
  const condition = (type: string) => last().conditions.find((x) => x.type === type);

  it("scales a Deployment up from its pods' CPU utilization: scale, status, conditions and the SuccessfulRescale Event", async () => {
    hpas.put(hpa());
    pods.put(pod("a"));
    pods.put(pod("b"));
    api.usage.set("a", 900).set("b", 1100); // 100 % of the requests, 50 % target → 4
    const r = await c.reconcile("default/web");
    assert.equal(r.requeueAfterMs, 15_000);
    assert.deepEqual(api.scales, [4]);
    assert.deepEqual(events, ["Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target"]);
    const s = last();
    assert.deepEqual([s.currentReplicas, s.desiredReplicas, s.lastScaleTime], [2, 4, "2026-11-26T01:00:00Z"]);
    assert.deepEqual(s.currentMetrics[0]?.resource, { name: "cpu", current: { value: undefined, averageValue: "1000m", averageUtilization: 100 } });
    assert.deepEqual(
      s.conditions.map((x) => [x.type, x.status, x.reason]),
      [
        ["AbleToScale", "True", "SucceededRescale"],
        ["ScalingActive", "True", "ValidMetricFound"],
        ["ScalingLimited", "False", "DesiredWithinRange"],
      ],
    );
    assert.equal(
      condition("ScalingActive")?.message,
      "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)",
    );
  });

  it("keeps the size within the tolerance, and holds a scale-down for the 300 s window without behavior", async () => {
    hpas.put(hpa());
    pods.put(pod("a"));
    pods.put(pod("b"));
    api.usage.set("a", 520).set("b", 530); // 52 % of 50 %: within 10 %
    await c.reconcile("default/web");
    assert.deepEqual(api.scales, []);
    assert.deepEqual([last().desiredReplicas, condition("AbleToScale")?.reason], [2, "ReadyForNewScale"]);
    api.usage.set("a", 100).set("b", 100); // 10 %: 1 replica recommended, the window holds 2
    api.now += 60_000;
    await c.reconcile("default/web");
    assert.deepEqual(api.scales, []);
    assert.equal(condition("AbleToScale")?.reason, "ScaleDownStabilized");
    api.now += 300_000;
    await c.reconcile("default/web");
    assert.deepEqual(api.scales, [1]);
    assert.match(events.at(-1) ?? "", /^Normal SuccessfulRescale New size: 1; reason: All metrics below target$/);
  });

  it("a behavior's short down window and policies: down after the window, up at most 4 pods per 15 s", async () => {
    hpas.put(
      hpa({
        behavior: {
          scaleUp: { stabilizationWindowSeconds: 0, selectPolicy: "Max", policies: [{ type: "Pods", value: 4, periodSeconds: 15 }] },
          scaleDown: { stabilizationWindowSeconds: 20, selectPolicy: "Max", policies: [{ type: "Percent", value: 100, periodSeconds: 15 }] },
        },
      }),
    );
    api.replicas = 1;
    pods.put(pod("a"));
    api.usage.set("a", 5000); // 500 % of 50 % → 10; policy: 1 + 4
    await c.reconcile("default/web");
    assert.deepEqual(api.scales, [5]);
    assert.deepEqual([condition("ScalingLimited")?.status, condition("ScalingLimited")?.reason], ["True", "ScaleUpLimit"]);
    // 5 s later the period still holds the 4 added: no more.
    api.now += 5_000;
    await c.reconcile("default/web");
    assert.deepEqual(api.scales, [5]);
    api.usage.clear();
    for (const n of ["a", "b", "c", "d", "e"]) {
      pods.put(pod(n));
      api.usage.set(n, 10);
    }
    api.now += 15_000;
    await c.reconcile("default/web");
    assert.deepEqual(api.scales, [5], "the 20 s down window holds the last recommendation of 10");
    api.now += 21_000;
    await c.reconcile("default/web");
    assert.deepEqual(api.scales, [5, 1]);
  });

  it("without metrics: ScalingActive False FailedGetResourceMetric, the Warning Events, the size unchanged", async () => {
    hpas.put(hpa());
    pods.put(pod("a"));
    await c.reconcile("default/web");
    assert.deepEqual(api.scales, []);
    assert.deepEqual([condition("ScalingActive")?.status, condition("ScalingActive")?.reason], ["False", "FailedGetResourceMetric"]);
    assert.equal(
      condition("ScalingActive")?.message,
      "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API",
    );
    assert.ok(events.some((e) => e.startsWith("Warning FailedGetResourceMetric ")));
    assert.ok(
      events.some((e) =>
        e.startsWith("Warning FailedComputeMetricsReplicas invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value"),
      ),
    );
    assert.equal(last().currentReplicas, 2);
  });

  it("a pod without a CPU request cannot be measured (missing request)", async () => {
    hpas.put(hpa());
    pods.put(pod("a", 0));
    api.usage.set("a", 100);
    await c.reconcile("default/web");
    assert.match(condition("ScalingActive")?.message ?? "", /missing request for cpu in container app of Pod a/);
  });

  it("an unknown target kind or a missing target: AbleToScale False FailedGetScale", async () => {
    hpas.put(hpa({ scaleTargetRef: { apiVersion: "apps/v1", kind: "StatefulSet", name: "db" } }));
    await c.reconcile("default/web");
    assert.deepEqual([condition("AbleToScale")?.status, condition("AbleToScale")?.reason], ["False", "FailedGetScale"]);
    assert.match(condition("AbleToScale")?.message ?? "", /no matches for kind "StatefulSet" in group "apps"/);
    hpas.put(hpa({ scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "gone" } }));
    await c.reconcile("default/web");
    assert.match(condition("AbleToScale")?.message ?? "", /unable to get the target's current scale: deployments.apps "gone" not found/);
  });

  it("scales ReplicaSets and ReplicationControllers through their scale subresource too (group and kind as the RESTMapper)", async () => {
    hpas.put(hpa({ minReplicas: 3, scaleTargetRef: { apiVersion: "apps/v1", kind: "ReplicaSet", name: "web" } }));
    await c.reconcile("default/web");
    hpas.put(hpa({ minReplicas: 4, scaleTargetRef: { apiVersion: "v1", kind: "ReplicationController", name: "web" } }));
    await c.reconcile("default/web");
    assert.deepEqual(api.targets, ["replicasets", "replicationcontrollers"]);
    assert.deepEqual(api.scales, [3, 4]);
    // A Deployment named in the core group is no scalable kind.
    hpas.put(hpa({ scaleTargetRef: { apiVersion: "v1", kind: "Deployment", name: "web" } }));
    await c.reconcile("default/web");
    assert.match(condition("AbleToScale")?.message ?? "", /no matches for kind "Deployment" in group ""/);
  });

  it("brings a target below minReplicas up to it and one at 0 is left alone (ScalingDisabled)", async () => {
    hpas.put(hpa({ minReplicas: 3 }));
    await c.reconcile("default/web");
    assert.deepEqual(api.scales, [3]);
    assert.match(events.at(-1) ?? "", /New size: 3; reason: Current number of replicas below Spec.MinReplicas/);
    api.replicas = 0;
    await c.reconcile("default/web");
    assert.deepEqual(api.scales, [3]);
    assert.deepEqual([condition("ScalingActive")?.status, condition("ScalingActive")?.reason], ["False", "ScalingDisabled"]);
  });

  it("a failed scale write: FailedRescale Event and AbleToScale False FailedUpdateScale", async () => {
    hpas.put(hpa());
    pods.put(pod("a"));
    pods.put(pod("b"));
    api.usage.set("a", 1000).set("b", 1000);
    api.failScale = new Error("Operation cannot be fulfilled");
    await c.reconcile("default/web");
    assert.deepEqual([condition("AbleToScale")?.status, condition("AbleToScale")?.reason], ["False", "FailedUpdateScale"]);
    assert.match(events.at(-1) ?? "", /^Warning FailedRescale New size: 4; reason: .*; error: Operation cannot be fulfilled$/);
  });

  it("writes no status when nothing changed, and forgets a deleted HPA", async () => {
    hpas.put(hpa());
    pods.put(pod("a"));
    pods.put(pod("b"));
    api.usage.set("a", 500).set("b", 500);
    await c.reconcile("default/web");
    const written = api.statuses.length;
    // The cache now holds what was written.
    const stored = hpa();
    stored.status = last();
    hpas.put(stored);
    await c.reconcile("default/web");
    assert.equal(api.statuses.length, written);
    hpas.remove("default/web");
    assert.deepEqual(await c.reconcile("default/web"), {});
  });

  it("reads Go durations as metrics-server writes windows", () => {
    assert.equal(goDurationMs("15.002s"), 15_002);
    assert.equal(goDurationMs("1m0s"), 60_000);
    assert.equal(goDurationMs("500ms"), 500);
  });
});
