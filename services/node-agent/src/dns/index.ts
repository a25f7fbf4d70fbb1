// The node's DNS: the responder pods ask, and the files that point them at it.
export { ClusterDns } from "./cluster-dns.js";
export type { ClusterDnsOptions } from "./cluster-dns.js";
export { answer, inDomain, emptyResponse, rcodeOf, Rcode, DNS_TTL } from "./answer.js";
export { storeSnapshot, staticSnapshot, storesSynced } from "./snapshot.js";
export type { Store, DnsSnapshot } from "./snapshot.js";
export { hostNameservers } from "./upstream.js";
export { resolvConf, etcHosts, CLUSTER_DOMAIN } from "./resolv-conf.js";
