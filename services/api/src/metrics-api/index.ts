// metrics.k8s.io/v1beta1 (kubectl top, autoscalers): see ./README.md.
export { MetricsCollector } from "./collect.js";
export type { MetricsCollectorOptions } from "./collect.js";
export { goDuration, nodeMetricsOf, podMetricsOf, usageList, GROUP, GROUP_VERSION } from "./convert.js";
export { metricsAggregatedGroup, metricsGroupEntry, metricsResourceList } from "./discovery.js";
export { isMetricsPath, parseMetricsPath, serveMetrics } from "./http.js";
export { metricsListJson, nodeMetricsJson, podMetricsJson } from "./json.js";
export { MetricsNatsDoor } from "./nats-door.js";
