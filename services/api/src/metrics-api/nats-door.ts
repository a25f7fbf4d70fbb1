import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { statusOf } from "@choreo/kit";
import { apiSubject } from "@choreo/kit/bus";
import { onAbort, type Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import { MetricsReply, NodeMetricsRequest, PodMetricsRequest } from "@choreo/kit/gen/choreo/metrics/v1beta1/metrics";
import { API_QUEUE } from "../nats/serve-nats.js";
import type { MetricsCollector } from "./collect.js";

/**
 * The metrics methods of the api's NATS door, for controllers (the
 * HorizontalPodAutoscaler): `choreo.api.podMetrics` (PodMetricsRequest) and
 * `choreo.api.nodeMetrics` (NodeMetricsRequest), each answered with a
 * MetricsReply (a list or a Status), in the api's queue group. The kit's
 * `ApiClient.podMetrics` / `nodeMetrics` call them.
 */
export class MetricsNatsDoor implements Runnable {
  readonly name = "metrics-nats-door";

  constructor(private readonly o: { nc: NatsConnection; collector: MetricsCollector; log: Logger }) {}

  async start(signal: AbortSignal): Promise<void> {
    const serve = (fn: (data: Uint8Array) => Promise<MetricsReply>, method: string) => (err: Error | null, msg: Msg) => {
      if (err) return;
      void fn(msg.data)
        .catch((e: unknown): MetricsReply => {
          const status = statusOf(e);
          if (status.code >= 500) this.o.log.warn({ err: e, method }, "metrics request failed");
          return { result: { $case: "status", value: status } };
        })
        .then((reply) => msg.respond(MetricsReply.encode(reply).finish()));
    };
    const subs: Subscription[] = [
      this.o.nc.subscribe(apiSubject("podMetrics"), {
        queue: API_QUEUE,
        callback: serve(async (d) => ({ result: { $case: "pods", value: await this.o.collector.podMetrics(PodMetricsRequest.decode(d)) } }), "podMetrics"),
      }),
      this.o.nc.subscribe(apiSubject("nodeMetrics"), {
        queue: API_QUEUE,
        callback: serve(async (d) => ({ result: { $case: "nodes", value: await this.o.collector.nodeMetrics(NodeMetricsRequest.decode(d)) } }), "nodeMetrics"),
      }),
    ];
    await new Promise<void>((resolve) => onAbort(signal, resolve));
    await Promise.all(subs.map((s) => s.drain().catch(() => undefined)));
  }
}
