// Table responses for `kubectl get`: kubectl's columns per kind, as pure functions.
export { toTable, kindTable } from "./table.js";
export type { ToTableOptions } from "./table.js";
export type { ColumnDefinition, KindTable } from "./types.js";
export { humanDuration, since } from "./age.js";
export { podStatus } from "./pods.js";
export { nodeStatus, nodeRoles } from "./nodes.js";
export { formatEndpoints, servicePorts, serviceExternalIp } from "./services.js";
export { jobStatus, jobCompletions } from "./workloads.js";
