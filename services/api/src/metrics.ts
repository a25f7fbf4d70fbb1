import { Counter, Gauge, type Registry } from "prom-client";
import { SeriesHistogram, type HistogramSeries } from "./series-histogram.js";

/** The api service's own metrics; `now` (ms) is for tests. */
export function apiMetrics(registry: Registry, now: () => number = () => Date.now()) {
  /** Since when the relay's backlog has been non-empty. */
  let backlogSince: number | undefined;
  const relayBacklog = new Gauge({ name: "choreo_relay_backlog", help: "Change records in Redis not yet published.", registers: [registry] });
  const requests = new SeriesHistogram({
    name: "choreo_api_request_duration_seconds",
    help: "Api requests by transport, method and status code.",
    labelNames: ["transport", "method", "code"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  /** The request histogram's series by transport, method and code: found by three map lookups, no label object made. */
  const requestSeries = new Map<string, Map<string, Map<number, HistogramSeries>>>();
  return {
    requests,
    /** One request of `transport` (nats, grpc) done: `method`, its status `code`, how long it took. */
    observeRequest(transport: string, method: string, code: number, seconds: number): void {
      let byMethod = requestSeries.get(transport);
      if (!byMethod) requestSeries.set(transport, (byMethod = new Map()));
      let byCode = byMethod.get(method);
      if (!byCode) byMethod.set(method, (byCode = new Map()));
      let series = byCode.get(code);
      if (!series) byCode.set(code, (series = requests.series(transport, method, String(code))));
      series.observe(seconds);
    },
    relayBacklog,
    relayPublished: new Counter({ name: "choreo_relay_published_total", help: "Change records published to the event log.", registers: [registry] }),
    relayLag: new Gauge({
      name: "choreo_relay_lag_seconds",
      help: "How long change records have been waiting in Redis unpublished (0 while the backlog is empty).",
      registers: [registry],
      // Computed when scraped: the lag grows between relay passes too (a stalled relay reports nothing).
      collect() {
        this.set(backlogSince === undefined ? 0 : (now() - backlogSince) / 1000);
      },
    }),
    /**
     * The relay's backlog (read on every relay pass): the backlog gauge, and
     * the lag — how long it has been non-empty, the age of the oldest
     * unpublished change to within one pass.
     */
    reportBacklog(n: number): void {
      relayBacklog.set(n);
      if (n === 0) backlogSince = undefined;
      else backlogSince ??= now();
    },
    watchers: new Gauge({
      name: "choreo_api_registered_watchers",
      help: "Watches open on this replica (HTTP, gRPC, NATS), by resource.",
      labelNames: ["resource"],
      registers: [registry],
    }),
    storeLatency: new SeriesHistogram({
      name: "choreo_api_store_request_duration_seconds",
      help: "Store (Redis) operations by operation and resource, as etcd_request_duration_seconds.",
      labelNames: ["operation", "resource"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    eventsExpired: new Counter({
      name: "choreo_api_events_expired_total",
      help: "Events deleted once their TTL (CHOREO_EVENT_TTL) passed.",
      registers: [registry],
    }),
    secretTransformations: new Counter({
      name: "choreo_api_secret_transformations_total",
      help: "Secrets sealed (written) and unsealed (read) at rest, by key name and status (ok, error: no key opened it).",
      labelNames: ["operation", "key", "status"],
      registers: [registry],
    }),
  };
}
