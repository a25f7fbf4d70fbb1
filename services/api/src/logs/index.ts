// GET pods/NAME/log: the api's LogsHandler over NATS, streamed from node agents.
export { NatsLogs } from "./nats-logs.js";
export type { NatsLogsOptions, PodLogQuery } from "./nats-logs.js";
export { resolvePodLogTarget } from "./pod-log-target.js";
export type { PodLogTarget } from "./pod-log-target.js";
