// metrics.k8s.io objects as metrics-server writes them in JSON.
import { messageToKubeJson, type KubeJson } from "@choreo/kit/kube-json";
import type { NodeMetrics, NodeMetricsList, PodMetrics, PodMetricsList } from "@choreo/kit/gen/choreo/metrics/v1beta1/metrics";
import { GROUP_VERSION } from "./convert.js";

const PKG = "choreo.metrics.v1beta1";

function item(type: "NodeMetrics" | "PodMetrics", m: NodeMetrics | PodMetrics): KubeJson {
  const { apiVersion: _v, kind: _k, ...body } = messageToKubeJson(`${PKG}.${type}`, m);
  return { kind: type, apiVersion: GROUP_VERSION, ...body };
}

/** A NodeMetrics (GET nodes/NAME). */
export function nodeMetricsJson(m: NodeMetrics): KubeJson {
  return item("NodeMetrics", m);
}

/** A PodMetrics (GET namespaces/NS/pods/NAME). */
export function podMetricsJson(m: PodMetrics): KubeJson {
  return item("PodMetrics", m);
}

/** A NodeMetricsList or PodMetricsList: `metadata: {}` (nothing is versioned), each item with its kind. */
export function metricsListJson(l: NodeMetricsList | PodMetricsList, type: "NodeMetrics" | "PodMetrics"): KubeJson {
  const items = (l.items as (NodeMetrics | PodMetrics)[]).map((m) => item(type, m));
  return { kind: `${type}List`, apiVersion: GROUP_VERSION, metadata: {}, items };
}
