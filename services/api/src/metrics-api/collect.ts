import type { NatsConnection } from "@nats-io/transport-node";
import { badRequest, isNotFound, notFound, unwrap } from "@choreo/kit";
import { assertSupportedFields, FieldSelectorError, nowRfc3339, parseFieldSelector } from "@choreo/kit/apimachinery";
import { agentSubject } from "@choreo/kit/bus";
import type { Logger } from "@choreo/kit/log";
import { getOrCreateCounter } from "@choreo/kit/metrics";
import type { Counter, Registry } from "prom-client";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type {
  NodeMetrics,
  NodeMetricsList,
  NodeMetricsRequest,
  PodMetrics,
  PodMetricsList,
  PodMetricsRequest,
} from "@choreo/kit/gen/choreo/metrics/v1beta1/metrics";
import { ListRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import { NodeStatsReply, NodeStatsRequest, type PodStats } from "@choreo/kit/gen/choreo/node/v1/stats";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import { GROUP_VERSION, nodeMetricsOf, podMetricsOf } from "./convert.js";

/** Options of {@link MetricsCollector}. */
export interface MetricsCollectorOptions {
  nc: NatsConnection;
  /** Where nodes and pods are read. */
  handlers: Pick<ApiHandlers, "get" | "list">;
  log: Logger;
  /** How long a node agent has to answer; a slower one is left out (default 1.5 s). */
  timeoutMs?: number;
  /** Gets `choreo_api_node_stats_requests_total{result}` (answered, unanswered) when given. */
  registry?: Registry;
}

/** metrics-server's field selectors on its resources. */
const FIELDS = ["metadata.name", "metadata.namespace"];

function checkFieldSelector(s: string, resource: string): void {
  try {
    assertSupportedFields(parseFieldSelector(s), FIELDS, resource);
  } catch (err) {
    if (err instanceof FieldSelectorError) throw badRequest(err.message);
    throw err;
  }
}

/**
 * What metrics-server does, on request: reads the nodes or pods asked for
 * from the registry, asks the agents of their nodes for their usage at once
 * (`choreo.agent.<node>.stats`, a short timeout), and turns the answers into
 * metrics.k8s.io NodeMetrics/PodMetrics. A node that does not answer is left
 * out, never an error for the whole list.
 */
export class MetricsCollector {
  private readonly log: Logger;
  private readonly asked: Counter<"result"> | undefined;

  constructor(private readonly o: MetricsCollectorOptions) {
    this.log = o.log;
    this.asked = o.registry
      ? getOrCreateCounter(
          o.registry,
          "choreo_api_node_stats_requests_total",
          "Node agents asked for their usage (metrics.k8s.io), by result: answered or unanswered (left out).",
          ["result"],
        )
      : undefined;
  }

  async nodeMetrics(req: NodeMetricsRequest): Promise<NodeMetricsList> {
    const missing = (): never => {
      throw notFound("nodemetrics", req.name, "metrics.k8s.io");
    };
    const nodes = req.name
      ? [
          unwrap(
            await this.o.handlers
              .get({ resource: "nodes", namespace: "", name: req.name })
              .catch((err: unknown) => (isNotFound(err) ? missing() : Promise.reject(err))),
          ) as Node,
        ]
      : await this.list<Node>("nodes", "", req.labelSelector, "");
    const replies = await Promise.all(nodes.map((n) => this.ask(n.metadata?.name ?? "", NodeStatsRequest.fromPartial({ pods: false }))));
    const items: NodeMetrics[] = [];
    nodes.forEach((n, i) => {
      const usage = replies[i]?.nodeUsage;
      if (usage) items.push(nodeMetricsOf(n, usage, nowRfc3339()));
    });
    if (req.name && items.length === 0) missing();
    return { apiVersion: GROUP_VERSION, kind: "NodeMetricsList", metadata: { resourceVersion: "", continue: "", remainingItemCount: undefined }, items };
  }

  async podMetrics(req: PodMetricsRequest): Promise<PodMetricsList> {
    checkFieldSelector(req.fieldSelector, "pods");
    let pods: Pod[];
    if (req.name) {
      if (!req.namespace) throw badRequest("a pod's metrics are asked for in its namespace");
      const pod = await this.o.handlers.get({ resource: "pods", namespace: req.namespace, name: req.name }).catch((err: unknown) => {
        if (isNotFound(err)) this.missingPod(req);
        throw err;
      });
      pods = [unwrap(pod) as Pod];
    } else {
      pods = await this.list<Pod>("pods", req.namespace, req.labelSelector, req.fieldSelector);
    }
    // Only pods on a node have usage; ask each of their nodes once.
    const byNode = new Map<string, Pod[]>();
    for (const p of pods) {
      const node = p.spec?.nodeName;
      if (!node || p.status?.phase === "Succeeded" || p.status?.phase === "Failed") continue;
      byNode.set(node, [...(byNode.get(node) ?? []), p]);
    }
    const ask = NodeStatsRequest.fromPartial({ pods: true, namespace: req.namespace });
    const nodes = [...byNode.keys()];
    const replies = await Promise.all(nodes.map((n) => this.ask(n, ask)));
    const stats = new Map<string, PodStats>();
    for (const r of replies) for (const p of r?.pods ?? []) stats.set(p.uid, p);
    const now = nowRfc3339();
    const items: PodMetrics[] = [];
    for (const p of pods) {
      const s = stats.get(p.metadata?.uid ?? "");
      if (s && s.containers.length > 0) items.push(podMetricsOf(p, s, now));
    }
    if (req.name && items.length === 0) this.missingPod(req);
    return { apiVersion: GROUP_VERSION, kind: "PodMetricsList", metadata: { resourceVersion: "", continue: "", remainingItemCount: undefined }, items };
  }

  /** metrics-server's 404 for a pod it has no metrics for (or that does not exist): `podmetrics.metrics.k8s.io "ns/name" not found`. */
  private missingPod(req: PodMetricsRequest): never {
    throw notFound("podmetrics", `${req.namespace}/${req.name}`, "metrics.k8s.io");
  }

  private async list<T>(resource: string, namespace: string, labelSelector: string, fieldSelector: string): Promise<T[]> {
    const l = await this.o.handlers.list(ListRequest.fromPartial({ resource, namespace, labelSelector, fieldSelector }));
    return l.items.map((o) => unwrap(o) as T);
  }

  /** One agent's stats; undefined when it did not answer in time (logged at debug: a node down is normal). */
  private async ask(node: string, req: NodeStatsRequest): Promise<NodeStatsReply | undefined> {
    try {
      const msg = await this.o.nc.request(agentSubject(node, "stats"), NodeStatsRequest.encode(req).finish(), { timeout: this.o.timeoutMs ?? 1_500 });
      const reply = NodeStatsReply.decode(msg.data);
      this.asked?.inc({ result: "answered" });
      return reply;
    } catch (err) {
      this.asked?.inc({ result: "unanswered" });
      this.log.debug({ err, node }, "node stats unavailable");
      return undefined;
    }
  }
}
