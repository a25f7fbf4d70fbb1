// pods/exec and pods/attach: WebSocket upgrades bridged to node agents over the bus.
export { upgradeHandler, queryOf, CHANNEL_PROTOCOLS, Channel, STREAM_SUBRESOURCES } from "./upgrade.js";
export type { UpgradeOptions } from "./upgrade.js";
export { NatsPodStreams } from "./pod-streams.js";
export type { PodStreams, PodStreamQuery, PodStreamTarget, NatsPodStreamsOptions } from "./pod-streams.js";
