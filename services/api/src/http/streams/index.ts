// pods/exec, pods/attach (WebSocket) and pods/portforward (SPDY/3.1, raw or in a WebSocket): upgrades bridged to node agents over the bus.
export { upgradeHandler, queryOf, CHANNEL_PROTOCOLS, Channel, STREAM_SUBRESOURCES } from "./upgrade.js";
export type { UpgradeOptions } from "./upgrade.js";
export { NatsPodStreams } from "./pod-streams.js";
export type { PodStreams, PodStreamQuery, PodStreamTarget, PodForwardQuery, PodForwardTarget, NatsPodStreamsOptions } from "./pod-streams.js";
export { servePortForward, PORT_FORWARD_PROTOCOL, PORT_FORWARD_TUNNEL_PROTOCOL } from "./port-forward.js";
export type { PortForwardContext } from "./port-forward.js";
