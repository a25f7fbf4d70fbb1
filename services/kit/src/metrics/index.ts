// Prometheus metrics: the registry, shared metric helpers and the /metrics endpoint.
export { createRegistry, serveMetrics, metricsServer, getOrCreateCounter, getOrCreateGauge, getOrCreateHistogram, exponentialBuckets } from "./metrics.js";
export type { MetricsServer, ServeMetricsOptions } from "./metrics.js";
export { HealthChecks, healthAnswer, eventLoopCheck } from "./health.js";
export type { HealthCheckFn, HealthReport } from "./health.js";
export { processHealth, busConnectedCheck } from "./process-health.js";
export type { BusLike } from "./process-health.js";
