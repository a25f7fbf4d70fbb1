/** The cluster's DNS domain (Kubernetes' default). */
export const CLUSTER_DOMAIN = "cluster.local";

/**
 * A pod's /etc/resolv.conf, as the kubelet writes it for dnsPolicy
 * ClusterFirst: the node's DNS responder, the search path that makes
 * `web` and `web.default` resolve inside namespace `default`, ndots 5.
 */
export function resolvConf(o: { namespace: string; nameserver: string; clusterDomain?: string }): string {
  const d = o.clusterDomain ?? CLUSTER_DOMAIN;
  return [`nameserver ${o.nameserver}`, `search ${o.namespace}.svc.${d} svc.${d} ${d}`, "options ndots:5", ""].join("\n");
}

/** A pod's /etc/hosts: localhost and the pod's own name on its IP. */
export function etcHosts(o: { podIp: string; hostname: string }): string {
  return ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback", ...(o.podIp ? [`${o.podIp}\t${o.hostname}`] : []), ""].join("\n");
}
