// GET /apis/metrics.k8s.io[/v1beta1[/...]]: discovery and NodeMetrics /
// PodMetrics for kubectl top, answered by the collector.
import type { ServerResponse } from "node:http";
import { badRequest, methodNotAllowed, unavailable } from "@choreo/kit";
import { NodeMetricsRequest, PodMetricsRequest } from "@choreo/kit/gen/choreo/metrics/v1beta1/metrics";
import type { MetricsCollector } from "./collect.js";
import { GROUP, VERSION } from "./convert.js";
import { metricsGroupEntry, metricsResourceList } from "./discovery.js";
import { metricsListJson, nodeMetricsJson, podMetricsJson } from "./json.js";

const PREFIX = `/apis/${GROUP}`;

/** Whether a path is the metrics API's (the gateway hands it to {@link serveMetrics}). */
export function isMetricsPath(pathname: string): boolean {
  return pathname === PREFIX || pathname.startsWith(`${PREFIX}/`);
}

/** What a metrics path addresses; undefined when it addresses nothing (404). */
export type MetricsRoute = { type: "group" } | { type: "resources" } | { type: "nodes"; name: string } | { type: "pods"; namespace: string; name: string };

/** Parses a metrics.k8s.io path (pure). */
export function parseMetricsPath(pathname: string): MetricsRoute | undefined {
  let seg: string[];
  try {
    seg = pathname.slice(PREFIX.length).split("/").filter(Boolean).map(decodeURIComponent);
  } catch {
    return undefined;
  }
  if (seg.length === 0) return { type: "group" };
  if (seg[0] !== VERSION) return undefined;
  const [, a, b, c, d, ...more] = seg;
  if (more.length > 0) return undefined;
  if (a === undefined) return { type: "resources" };
  if (a === "nodes" && c === undefined) return { type: "nodes", name: b ?? "" };
  if (a === "pods" && b === undefined) return { type: "pods", namespace: "", name: "" };
  if (a === "namespaces" && b && c === "pods") return { type: "pods", namespace: b, name: d ?? "" };
  return undefined;
}

function send(res: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(200, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Serves one metrics.k8s.io request; throws an ApiError (the gateway answers
 * it as a Status). `collector` undefined: the group is listed but nothing
 * collects (503), as an aggregated API whose server is down.
 */
export async function serveMetrics(
  method: string,
  url: URL,
  res: ServerResponse,
  collector: MetricsCollector | undefined,
  notFound: () => Error,
): Promise<void> {
  const route = parseMetricsPath(url.pathname);
  if (!route) throw notFound();
  if (method !== "GET") throw methodNotAllowed(`${method} is not supported on ${GROUP} (get and list only)`);
  if (route.type === "group") return send(res, { kind: "APIGroup", apiVersion: "v1", ...metricsGroupEntry() });
  if (route.type === "resources") return send(res, metricsResourceList());
  const watch = url.searchParams.get("watch");
  if (watch && watch !== "false" && watch !== "0") throw methodNotAllowed(`watch is not supported on ${GROUP}`);
  if (!collector) throw unavailable(`the ${GROUP} API is not served by this api server`);
  const q = (k: string): string => url.searchParams.get(k) ?? "";
  if (route.type === "nodes") {
    if (q("fieldSelector")) throw badRequest(`field selectors are not supported on nodes.${GROUP}`);
    const list = await collector.nodeMetrics(NodeMetricsRequest.fromPartial({ name: route.name, labelSelector: q("labelSelector") }));
    return send(res, route.name ? nodeMetricsJson(list.items[0]!) : metricsListJson(list, "NodeMetrics"));
  }
  const list = await collector.podMetrics(
    PodMetricsRequest.fromPartial({ namespace: route.namespace, name: route.name, labelSelector: q("labelSelector"), fieldSelector: q("fieldSelector") }),
  );
  return send(res, route.name ? podMetricsJson(list.items[0]!) : metricsListJson(list, "PodMetrics"));
}
