import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import { ApiError, statusOf } from "@choreo/kit";
import { describe, it } from "node:test";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { goDuration, nodeMetricsOf, podMetricsOf, usageList } from "./convert.js";
import { metricsResourceList } from "./discovery.js";
import { isMetricsPath, parseMetricsPath, serveMetrics } from "./http.js";
import type { MetricsCollector } from "./collect.js";
import { metricsListJson, nodeMetricsJson, podMetricsJson } from "./json.js";

const NOW = "2026-11-26T01:00:00Z";
const usage = (cpu: number, mem: number, windowMs = 15_000, timestamp = "2026-11-26T00:59:59.123Z") => ({
  cpuNanocores: cpu,
  memoryWorkingSetBytes: mem,
  timestamp,
  windowMs,
});

describe("metrics.k8s.io objects as metrics-server writes them", () => {
  it("quantities: cpu in canonical decimal (n, m, cores), memory in binary units when whole Ki", () => {
    assert.deepEqual(usageList(usage(123_456_789, 1_263_616)), { cpu: "123456789n", memory: "1234Ki" });
    assert.deepEqual(usageList(usage(250_000_000, 1 << 20)), { cpu: "250m", memory: "1Mi" });
    assert.deepEqual(usageList(usage(2_000_000_000, 1000)), { cpu: "2", memory: "1k" }, "below 1Ki Kubernetes prints decimal");
    assert.deepEqual(usageList(usage(1, 1500)), { cpu: "1n", memory: "1500" });
    assert.deepEqual(usageList(usage(0, 0)), { cpu: "0", memory: "0" });
  });

  it("windows print as Go durations", () => {
    assert.equal(goDuration(15_000), "15s");
    assert.equal(goDuration(15_002), "15.002s");
    assert.equal(goDuration(60_500), "1m0.5s");
    assert.equal(goDuration(0), "0s");
  });

  it("a NodeMetrics: the node's name and labels, timestamp to the second, window, usage", () => {
    const node = { metadata: { name: "n1", labels: { zone: "a" } } } as unknown as Node;
    const json = nodeMetricsJson(nodeMetricsOf(node, usage(1_000_000_000, 4096), NOW));
    assert.deepEqual(json, {
      kind: "NodeMetrics",
      apiVersion: "metrics.k8s.io/v1beta1",
      metadata: { name: "n1", labels: { zone: "a" }, creationTimestamp: NOW },
      timestamp: "2026-11-26T00:59:59Z",
      window: "15s",
      usage: { cpu: "1", memory: "4Ki" },
    });
  });

  it("a PodMetrics: containers in spec order, the newest container reading's window; lists carry kinds", () => {
    const pod = {
      metadata: { name: "web", namespace: "default", labels: { app: "web" } },
      spec: { containers: [{ name: "app" }, { name: "side" }] },
    } as unknown as Pod;
    const stats = {
      namespace: "default",
      name: "web",
      uid: "u1",
      containers: [
        { name: "side", usage: usage(1_000_000, 8192, 14_000, "2026-11-26T00:59:50Z") },
        { name: "app", usage: usage(999_000_000, 1 << 20, 15_500, "2026-11-26T00:59:58Z") },
      ],
    };
    const m = podMetricsOf(pod, stats, NOW);
    const json = podMetricsJson(m);
    assert.deepEqual(json, {
      kind: "PodMetrics",
      apiVersion: "metrics.k8s.io/v1beta1",
      metadata: { name: "web", namespace: "default", labels: { app: "web" }, creationTimestamp: NOW },
      timestamp: "2026-11-26T00:59:58Z",
      window: "15.5s",
      containers: [
        { name: "app", usage: { cpu: "999m", memory: "1Mi" } },
        { name: "side", usage: { cpu: "1m", memory: "8Ki" } },
      ],
    });
    const list = metricsListJson({ apiVersion: "", kind: "", metadata: undefined, items: [m] }, "PodMetrics");
    assert.equal(list["kind"], "PodMetricsList");
    assert.equal(list["apiVersion"], "metrics.k8s.io/v1beta1");
    assert.deepEqual(list["metadata"], {});
    assert.deepEqual(list["items"], [json]);
    assert.deepEqual(metricsListJson({ apiVersion: "", kind: "", metadata: undefined, items: [] }, "NodeMetrics"), {
      kind: "NodeMetricsList",
      apiVersion: "metrics.k8s.io/v1beta1",
      metadata: {},
      items: [],
    });
  });

  it("paths: the group, its resources, nodes, pods in every or one namespace; anything else is not found", () => {
    assert.ok(isMetricsPath("/apis/metrics.k8s.io"));
    assert.ok(isMetricsPath("/apis/metrics.k8s.io/v1beta1/nodes"));
    assert.ok(!isMetricsPath("/apis/metrics.k8s.iox"));
    assert.deepEqual(parseMetricsPath("/apis/metrics.k8s.io"), { type: "group" });
    assert.deepEqual(parseMetricsPath("/apis/metrics.k8s.io/v1beta1/"), { type: "resources" });
    assert.deepEqual(parseMetricsPath("/apis/metrics.k8s.io/v1beta1/nodes"), { type: "nodes", name: "" });
    assert.deepEqual(parseMetricsPath("/apis/metrics.k8s.io/v1beta1/nodes/n1"), { type: "nodes", name: "n1" });
    assert.deepEqual(parseMetricsPath("/apis/metrics.k8s.io/v1beta1/pods"), { type: "pods", namespace: "", name: "" });
    assert.deepEqual(parseMetricsPath("/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods"), { type: "pods", namespace: "ns", name: "" });
    assert.deepEqual(parseMetricsPath("/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/web"), { type: "pods", namespace: "ns", name: "web" });
    for (const bad of [
      "/apis/metrics.k8s.io/v1",
      "/apis/metrics.k8s.io/v1beta1/nodes/n1/x",
      "/apis/metrics.k8s.io/v1beta1/pods/web",
      "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/web/x",
      "/apis/metrics.k8s.io/v1beta1/%zz",
    ]) {
      assert.equal(parseMetricsPath(bad), undefined, bad);
    }
  });

  it("discovery: nodes (cluster) and pods (namespaced), get and list", () => {
    const r = metricsResourceList() as { groupVersion: string; resources: { name: string; namespaced: boolean; kind: string; verbs: string[] }[] };
    assert.equal(r.groupVersion, "metrics.k8s.io/v1beta1");
    assert.deepEqual(
      r.resources.map((x) => [x.name, x.namespaced, x.kind, x.verbs]),
      [
        ["nodes", false, "NodeMetrics", ["get", "list"]],
        ["pods", true, "PodMetrics", ["get", "list"]],
      ],
    );
  });
});

describe("serving metrics.k8s.io over HTTP", () => {
  /** A response that keeps what was written. */
  function response(): { res: ServerResponse; code: () => number; body: () => Record<string, unknown> } {
    let code = 0;
    let text = "";
    const res = {
      writeHead(c: number) {
        code = c;
        return res;
      },
      end(t: string) {
        text = t;
      },
    };
    return { res: res as unknown as ServerResponse, code: () => code, body: () => JSON.parse(text) as Record<string, unknown> };
  }
  const notFound = () => new ApiError({ ...statusOf(new Error("x")), code: 404, reason: "NotFound" });
  const asked: unknown[] = [];
  const collector = {
    nodeMetrics: (r: unknown) => (asked.push(r), Promise.resolve({ apiVersion: "", kind: "", metadata: undefined, items: [] })),
    podMetrics: (r: unknown) => (asked.push(r), Promise.resolve({ apiVersion: "", kind: "", metadata: undefined, items: [] })),
  } as unknown as MetricsCollector;
  const serve = async (method: string, path: string, c: MetricsCollector | null = collector) => {
    const r = response();
    try {
      await serveMetrics(method, new URL(path, "http://x"), r.res, c ?? undefined, notFound);
      return { code: r.code(), body: r.body() };
    } catch (err) {
      return { code: statusOf(err).code, body: {} };
    }
  };

  it("discovery documents, lists with the selectors passed on", async () => {
    assert.deepEqual((await serve("GET", "/apis/metrics.k8s.io")).body["preferredVersion"], { groupVersion: "metrics.k8s.io/v1beta1", version: "v1beta1" });
    assert.equal((await serve("GET", "/apis/metrics.k8s.io/v1beta1")).body["kind"], "APIResourceList");
    const pods = await serve("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods?labelSelector=app%3Dweb&fieldSelector=metadata.name%3Dweb");
    assert.equal(pods.code, 200);
    assert.equal(pods.body["kind"], "PodMetricsList");
    assert.deepEqual(asked.at(-1), { namespace: "ns", name: "", labelSelector: "app=web", fieldSelector: "metadata.name=web" });
    assert.equal((await serve("GET", "/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=zone%3Da")).body["kind"], "NodeMetricsList");
    assert.deepEqual(asked.at(-1), { name: "", labelSelector: "zone=a" });
  });

  it("refuses what metrics-server refuses: writes and watches 405, node field selectors 400, unknown paths 404; 503 without a collector", async () => {
    assert.equal((await serve("POST", "/apis/metrics.k8s.io/v1beta1/nodes")).code, 405);
    assert.equal((await serve("GET", "/apis/metrics.k8s.io/v1beta1/pods?watch=true")).code, 405);
    assert.equal((await serve("GET", "/apis/metrics.k8s.io/v1beta1/nodes?fieldSelector=metadata.name%3Dn")).code, 400);
    assert.equal((await serve("GET", "/apis/metrics.k8s.io/v1beta1/deployments")).code, 404);
    assert.equal((await serve("GET", "/apis/metrics.k8s.io/v1beta1/nodes", null)).code, 503);
  });
});
