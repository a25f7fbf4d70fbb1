// Prometheus metrics: the registry and the /metrics endpoint.
export { createRegistry, serveMetrics, metricsServer } from "./metrics.js";
export type { MetricsServer } from "./metrics.js";
