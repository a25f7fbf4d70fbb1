import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { statusOf } from "@choreo/kit";
import { apiSubject, drainSubscriptions } from "@choreo/kit/bus";
import { onAbort, type Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import { MetricsReply, NodeMetricsRequest, PodMetricsRequest } from "@choreo/kit/gen/choreo/metrics/v1beta1/metrics";
import { resourceAttributes } from "../auth/attributes.js";
import { API_QUEUE } from "../nats/serve-nats.js";
import { admitNatsRequest, type NatsRequestAuth } from "../nats/request-auth.js";
import type { MetricsCollector } from "./collect.js";
import { GROUP } from "./convert.js";

/** metrics.k8s.io as the authorizer sees it (the HTTP door's attributes for the same paths). */
const METRICS = { group: GROUP, version: "v1beta1" };

/**
 * The metrics methods of the api's NATS door, for controllers (the
 * HorizontalPodAutoscaler): `choreo.api.podMetrics` (PodMetricsRequest) and
 * `choreo.api.nodeMetrics` (NodeMetricsRequest), each answered with a
 * MetricsReply (a list or a Status), in the api's queue group. The kit's
 * `ApiClient.podMetrics` / `nodeMetrics` call them. Each request is
 * authenticated by its bearer token like every other api subject (401
 * without one) and authorized as Kubernetes authorizes metrics-server's
 * API: `get` (a name) or `list` on `pods.metrics.k8s.io` in the namespace
 * ("" every namespace) or `nodes.metrics.k8s.io` (403, nothing asked of the
 * nodes); audited when an audit log is given.
 */
export class MetricsNatsDoor implements Runnable {
  readonly name = "metrics-nats-door";

  constructor(private readonly o: { nc: NatsConnection; collector: MetricsCollector; log: Logger } & NatsRequestAuth) {}

  async start(signal: AbortSignal): Promise<void> {
    const serve = (fn: (msg: Msg) => Promise<MetricsReply>, method: string) => (err: Error | null, msg: Msg) => {
      if (err) return;
      void fn(msg)
        .catch((e: unknown): MetricsReply => {
          const status = statusOf(e);
          if (status.code >= 500) this.o.log.warn({ err: e, method }, "metrics request failed");
          return { result: { $case: "status", value: status } };
        })
        .then((reply) => msg.respond(MetricsReply.encode(reply).finish()));
    };
    /** Admits `msg` as `resource` (`get` with a name, else `list`), runs `fn`, finishes its audit entry. */
    const admitted = async <T>(msg: Msg, resource: string, namespace: string, name: string, fn: () => Promise<T>): Promise<T> => {
      const a = await admitNatsRequest(msg, this.o, (user) => resourceAttributes(user, name ? "get" : "list", { ...METRICS, resource }, namespace, name));
      try {
        const out = await fn();
        a?.entry?.finish({ code: 200 });
        return out;
      } catch (e) {
        const st = statusOf(e);
        a?.entry?.finish({ code: st.code, status: st });
        throw e;
      }
    };
    const subs: Subscription[] = [
      this.o.nc.subscribe(apiSubject("podMetrics"), {
        queue: API_QUEUE,
        callback: serve(async (msg) => {
          const req = PodMetricsRequest.decode(msg.data);
          return { result: { $case: "pods", value: await admitted(msg, "pods", req.namespace, req.name, () => this.o.collector.podMetrics(req)) } };
        }, "podMetrics"),
      }),
      this.o.nc.subscribe(apiSubject("nodeMetrics"), {
        queue: API_QUEUE,
        callback: serve(async (msg) => {
          const req = NodeMetricsRequest.decode(msg.data);
          return { result: { $case: "nodes", value: await admitted(msg, "nodes", "", req.name, () => this.o.collector.nodeMetrics(req)) } };
        }, "nodeMetrics"),
      }),
    ];
    await new Promise<void>((resolve) => onAbort(signal, resolve));
    await drainSubscriptions(subs);
  }
}
