// The node's pod network: a bridge, veths into pod namespaces, forwarding and masquerading.
export { BridgeNetwork } from "./bridge-network.js";
export type { BridgeNetworkOptions } from "./bridge-network.js";
export { cleanupAll, cleanupNode, removeChains } from "./cleanup.js";
export { CommandError, run } from "../exec.js";
export { LABELS, NAMES, shortHash } from "./types.js";
export type { PodNetwork } from "./types.js";
