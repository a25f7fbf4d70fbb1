// pods/exec and pods/attach on the node: the agent's side of the bus streams.
export { ExecServer, Channel, exitStatus, parseSize } from "./exec-server.js";
export type { ExecServerOptions } from "./exec-server.js";
export { PortForwardServer, ForwardChannel, forwardError } from "./port-forward-server.js";
export type { PortForwardServerOptions } from "./port-forward-server.js";
