// The service data plane: Services' virtual IPs and node ports as iptables rules.
export { ServiceProxy } from "./service-proxy.js";
export type { ServiceProxyOptions, PeerReachability } from "./service-proxy.js";
export { renderProxyRules, renderBootstrap, reachableBackends, proxyJumps, isProxyChain, backendsOf, MASQ_MARK } from "./rules.js";
export type { RenderOptions, RenderedRules, ProxyJump } from "./rules.js";
