import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** The api service's own metrics. */
export function apiMetrics(registry: Registry) {
  return {
    requests: new Histogram({
      name: "choreo_api_request_duration_seconds",
      help: "Api requests by transport, method and status code.",
      labelNames: ["transport", "method", "code"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    relayBacklog: new Gauge({ name: "choreo_relay_backlog", help: "Change records in Redis not yet published.", registers: [registry] }),
    relayPublished: new Counter({ name: "choreo_relay_published_total", help: "Change records published to the event log.", registers: [registry] }),
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
