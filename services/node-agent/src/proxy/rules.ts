// The service data plane as an iptables-restore script: a pure function of
// the Services and Endpoints, in the layout of kube-proxy's iptables mode.
//
//   nat PREROUTING, OUTPUT ─▶ <p>SERVICES ─ VIP:port ─▶ <p>SVC-<h> ─ random 1/n ─▶ <p>SEP-<h> ─▶ DNAT ip:port
//                                  └─ dst LOCAL ─▶ <p>NODEPORTS ─ nodePort ─┘
//   nat POSTROUTING ─▶ <p>PX-POST: masquerade what was marked (hairpin, node ports, off-cluster clients)
//   filter INPUT, FORWARD, OUTPUT ─▶ <p>SERVICES: REJECT a VIP:port or node port without ready endpoints
import type { Endpoints, Service, ServicePort } from "@choreo/kit/gen/choreo/core/v1/core";
import { shortHash } from "../net/types.js";

/** The mark asking POSTROUTING to masquerade a packet (kube-proxy's bit). */
export const MASQ_MARK = "0x4000/0x4000";

/** Options of the rendering. */
export interface RenderOptions {
  /** Every chain starts with it, e.g. `CHO-1a2b3c-`. */
  chainPrefix: string;
  /** The pods' addresses: clients outside it are masqueraded so replies come back through this node. */
  clusterCidr: string;
  /** Chains written before and no longer wanted: flushed and deleted. */
  stale?: { filter?: readonly string[]; nat?: readonly string[] };
  /** Jumps from builtin chains to add (those not present yet), from `proxyJumps`. */
  jumps?: readonly ProxyJump[];
  /**
   * Nodes this node cannot reach now (net/peer-probe.ts): their endpoints
   * (an address's `nodeName`) get no new connections — unless that would
   * leave a service port none, when all are kept (fail open).
   */
  leaveOut?: ReadonlySet<string>;
}

/** A jump from a builtin chain into the proxy's chains. */
export interface ProxyJump {
  table: "filter" | "nat";
  /** The rule as iptables-save prints it, `-A OUTPUT -j X`. */
  rule: string;
}

/** The proxy's chains that hang off builtin chains, and the jumps to them. */
export function proxyJumps(prefix: string): ProxyJump[] {
  const nat = `${prefix}SERVICES`;
  const post = `${prefix}PX-POST`;
  const filter = `${prefix}SERVICES`;
  return [
    { table: "nat", rule: `-A PREROUTING -j ${nat}` },
    { table: "nat", rule: `-A OUTPUT -j ${nat}` },
    { table: "nat", rule: `-A POSTROUTING -j ${post}` },
    ...["INPUT", "FORWARD", "OUTPUT"].map((c): ProxyJump => ({ table: "filter", rule: `-A ${c} -m conntrack --ctstate NEW -j ${filter}` })),
  ];
}

const PROXY_CHAIN = /^(SERVICES|NODEPORTS|PX-POST|SVC-[0-9a-f]+|SEP-[0-9a-f]+)$/;

/** Whether `chain` is one of the proxy's chains for `prefix` (the node's network chains share the prefix). */
export function isProxyChain(prefix: string, chain: string): boolean {
  return chain.startsWith(prefix) && PROXY_CHAIN.test(chain.slice(prefix.length));
}

/**
 * The script a proxy starting writes before it knows any Service: the
 * proxy's base chains that are missing (empty, with the masquerade rule) and
 * the jumps to them not there yet — and nothing else. Chains an earlier
 * agent with this prefix left (kill -9 runs no clean-up) keep routing every
 * Service as they did until the first sync rewrites them: declaring them
 * here would empty them, and a connection opened meanwhile would leave
 * un-DNATed and stay so (its conntrack entry outlives the rules' return).
 */
export function renderBootstrap(opts: {
  chainPrefix: string;
  existing: { filter: readonly string[]; nat: readonly string[] };
  jumps: readonly ProxyJump[];
}): string {
  const p = opts.chainPrefix;
  const missing = (table: "filter" | "nat", chains: string[]): string[] => chains.filter((c) => !opts.existing[table].includes(c));
  const nat = missing("nat", [`${p}SERVICES`, `${p}NODEPORTS`, `${p}PX-POST`]);
  const filter = missing("filter", [`${p}SERVICES`]);
  const jumps = (table: string): string[] => opts.jumps.filter((j) => j.table === table).map((j) => j.rule.replace(/^-A (\S+)/, "-I $1 1"));
  const natRules = [
    ...nat.map((c) => `:${c} - [0:0]`),
    ...(nat.includes(`${p}PX-POST`) ? [`-A ${p}PX-POST -m mark --mark ${MASQ_MARK} -j MASQUERADE`] : []),
    ...(nat.includes(`${p}SERVICES`) ? [`-A ${p}SERVICES -m addrtype --dst-type LOCAL -j ${p}NODEPORTS`] : []),
    ...jumps("nat"),
  ];
  const filterRules = [...filter.map((c) => `:${c} - [0:0]`), ...jumps("filter")];
  return [...(filterRules.length ? ["*filter", ...filterRules, "COMMIT"] : []), ...(natRules.length ? ["*nat", ...natRules, "COMMIT"] : []), ""].join("\n");
}

/** One ready backend of a service port. */
interface Backend {
  ip: string;
  port: number;
  /** The node it runs on, as the Endpoints say. */
  node?: string;
}

/** The ready addresses serving `sp`: endpoint ports are matched to service ports by name and protocol. */
export function backendsOf(ep: Endpoints | undefined, sp: ServicePort): Backend[] {
  const out: Backend[] = [];
  for (const subset of ep?.subsets ?? []) {
    const port = subset.ports.find((p) => p.name === sp.name && (p.protocol || "TCP") === (sp.protocol || "TCP"));
    if (!port) continue;
    for (const a of subset.addresses) out.push({ ip: a.ip, port: port.port, ...(a.nodeName ? { node: a.nodeName } : {}) });
  }
  const seen = new Set<string>();
  return out
    .filter((b) => (seen.has(`${b.ip}:${b.port}`) ? false : (seen.add(`${b.ip}:${b.port}`), true)))
    .sort((a, b) => (a.ip === b.ip ? a.port - b.port : a.ip < b.ip ? -1 : 1));
}

/** The rendered script and the chains it keeps, per table. */
export interface RenderedRules {
  script: string;
  chains: { filter: string[]; nat: string[] };
  /** Backends (per service port) left out for their node's sake (`leaveOut`). */
  leftOut: number;
  /** Their addresses. */
  leftOutIps: string[];
}

/** `backends` without those on a node of `leaveOut`, unless none would be left (then all of them). */
export function reachableBackends<B extends { node?: string }>(backends: readonly B[], leaveOut: ReadonlySet<string> | undefined): B[] {
  if (!leaveOut || leaveOut.size === 0) return [...backends];
  const kept = backends.filter((b) => !b.node || !leaveOut.has(b.node));
  return kept.length > 0 ? kept : [...backends];
}

/**
 * Renders the whole ruleset for `iptables-restore --noflush`: every chain of
 * the proxy is declared (so emptied) and rewritten, stale chains deleted, in
 * one transaction per table — traffic never sees a half-written state.
 */
export function renderProxyRules(services: readonly Service[], endpoints: readonly Endpoints[], opts: RenderOptions): RenderedRules {
  const p = opts.chainPrefix;
  const services_ = `${p}SERVICES`;
  const nodePorts = `${p}NODEPORTS`;
  const post = `${p}PX-POST`;
  const byKey = new Map(endpoints.map((e) => [`${e.metadata?.namespace}/${e.metadata?.name}`, e]));
  const natChains = [services_, nodePorts, post];
  const nat: string[] = [`-A ${post} -m mark --mark ${MASQ_MARK} -j MASQUERADE`];
  const filter: string[] = [];
  const mark = `-j MARK --set-xmark ${MASQ_MARK}`;
  let leftOut = 0;
  const leftOutIps = new Set<string>();

  const sorted = [...services].sort((a, b) => key(a).localeCompare(key(b)));
  for (const svc of sorted) {
    const vip = svc.spec?.clusterIp ?? "";
    if (!vip || vip === "None") continue;
    const isNodePort = svc.spec?.type === "NodePort";
    for (const sp of svc.spec?.ports ?? []) {
      const proto = (sp.protocol || "TCP").toLowerCase();
      const match = `-p ${proto} -m ${proto}`;
      const id = `${key(svc)}:${sp.name}:${proto}`;
      const all = backendsOf(byKey.get(key(svc)), sp);
      const backends = reachableBackends(all, opts.leaveOut);
      leftOut += all.length - backends.length;
      for (const b of all) if (!backends.includes(b)) leftOutIps.add(b.ip);
      const nodePort = isNodePort && sp.nodePort > 0 ? sp.nodePort : 0;
      if (backends.length === 0) {
        // Fail fast: a refused connection instead of a SYN into the void.
        filter.push(`-A ${services_} -d ${vip}/32 ${match} --dport ${sp.port} -j REJECT --reject-with icmp-port-unreachable`);
        if (nodePort) filter.push(`-A ${services_} -m addrtype --dst-type LOCAL ${match} --dport ${nodePort} -j REJECT --reject-with icmp-port-unreachable`);
        continue;
      }
      const svcChain = `${p}SVC-${shortHash(id, 12)}`;
      natChains.push(svcChain);
      nat.push(`-A ${services_} ! -s ${opts.clusterCidr} -d ${vip}/32 ${match} --dport ${sp.port} ${mark}`);
      nat.push(`-A ${services_} -d ${vip}/32 ${match} --dport ${sp.port} -j ${svcChain}`);
      if (nodePort) {
        // Node ports, 127.0.0.1 included, are masqueraded so replies return through this node.
        nat.push(`-A ${nodePorts} ${match} --dport ${nodePort} ${mark}`);
        nat.push(`-A ${nodePorts} ${match} --dport ${nodePort} -j ${svcChain}`);
      }
      backends.forEach((b, i) => {
        const sep = `${p}SEP-${shortHash(`${id}:${b.ip}:${b.port}`, 12)}`;
        natChains.push(sep);
        const left = backends.length - i;
        // kube-proxy's spread: 1/n, then 1/(n-1) of the rest, …, the last takes what remains.
        nat.push(left > 1 ? `-A ${svcChain} -m statistic --mode random --probability ${(1 / left).toFixed(10)} -j ${sep}` : `-A ${svcChain} -j ${sep}`);
        // A pod reaching itself through its Service: masquerade so the reply goes back through the bridge.
        nat.push(`-A ${sep} -s ${b.ip}/32 ${mark}`);
        nat.push(`-A ${sep} ${match} -j DNAT --to-destination ${b.ip}:${b.port}`);
      });
    }
  }
  nat.push(`-A ${services_} -m addrtype --dst-type LOCAL -j ${nodePorts}`);

  const filterChains = [services_];
  const staleNat = (opts.stale?.nat ?? []).filter((c) => !natChains.includes(c));
  const staleFilter = (opts.stale?.filter ?? []).filter((c) => !filterChains.includes(c));
  const jumps = (table: string): string[] => (opts.jumps ?? []).filter((j) => j.table === table).map((j) => j.rule.replace(/^-A (\S+)/, "-I $1 1"));
  const script = [
    "*filter",
    ...[...filterChains, ...staleFilter].map((c) => `:${c} - [0:0]`),
    ...filter,
    ...jumps("filter"),
    ...staleFilter.map((c) => `-X ${c}`),
    "COMMIT",
    "*nat",
    ...[...natChains, ...staleNat].map((c) => `:${c} - [0:0]`),
    ...nat,
    ...jumps("nat"),
    ...staleNat.map((c) => `-X ${c}`),
    "COMMIT",
    "",
  ].join("\n");
  return { script, chains: { filter: filterChains, nat: natChains }, leftOut, leftOutIps: [...leftOutIps].sort() };
}

function key(svc: Service): string {
  return `${svc.metadata?.namespace}/${svc.metadata?.name}`;
}
