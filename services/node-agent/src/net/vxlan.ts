// The VXLAN overlay between nodes that do not share an L2 segment (flannel's
// vxlan backend): one `vxlan` device per machine (`choreo.vx`, VNI 1, UDP
// 4789, no learning), whose MAC and VTEP address (the network address of
// the node's pod CIDR, /32 on the device) the agent publishes on its Node;
// every other node programs, per remote node, a route to its pod CIDR via
// its VTEP address on the device (onlink), a permanent neighbour entry
// (VTEP address → MAC) and an FDB entry (MAC → its InternalIP), so the
// kernel encapsulates without ARP or flooding. This file: names, the
// annotation, the pure scripts and parsers, and the device itself.
import { createHash } from "node:crypto";
import { isIPv4 } from "node:net";
import { CommandError, run } from "../exec.js";
import { hasRule, removalScript, restore, saveRules } from "./iptables.js";
import { ipToNumber, numberToIp } from "../runtime/ip-pool.js";

/** The overlay device (one per network namespace, as flannel's `flannel.1`). */
export const VXLAN_DEVICE = "choreo.vx";
/** The VXLAN network identifier every choreo node uses. */
export const VXLAN_VNI = 1;
/** The UDP port (IANA's VXLAN port; flannel uses 8472). `--vxlan-port` changes it: every node must use the same. */
export const VXLAN_PORT = 4789;
/** The VXLAN header costs 50 bytes of the underlay's MTU (IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14). */
export const VXLAN_OVERHEAD = 50;

/** How a node reaches the other nodes' pods: routes on one segment, the overlay, or per peer. */
export const BACKENDS = ["host-gw", "vxlan", "auto"] as const;
export type Backend = (typeof BACKENDS)[number];

/** The Node annotation naming the backend a node accepts (`vxlan`: it has a device; absent: host-gw only). */
export const BACKEND_TYPE_ANNOTATION = "choreo.dev/backend-type";
/** The Node annotation carrying what other nodes need to send to this one over VXLAN (flannel's `backend-data`). */
export const BACKEND_DATA_ANNOTATION = "choreo.dev/backend-data";

/** What a node publishes about its end of the overlay. */
export interface VtepData {
  vni: number;
  port: number;
  /** The device's MAC. */
  mac: string;
  /** The device's address: the network address of the node's pod CIDR. */
  vtep: string;
}

/** A remote end the overlay sends to: its VTEP address, its device's MAC, and its InternalIP (the underlay). */
export interface VxlanPeer {
  vtep: string;
  mac: string;
  underlay: string;
}

/**
 * The device's MAC for `node` (pure): locally administered, unicast, from a
 * hash of the name — the same after the device is recreated (a clean-up, a
 * reboot), so the other nodes' neighbour and FDB entries stay right.
 */
export function vtepMac(node: string): string {
  const h = createHash("sha256").update(node).digest();
  const bytes = [0x0a, h[0]!, h[1]!, h[2]!, h[3]!, h[4]!];
  return bytes.map((b) => b.toString(16).padStart(2, "0")).join(":");
}

/** The VTEP address of a pod CIDR: its network address (`10.244.3.0/24` → `10.244.3.0`), as flannel. */
export function vtepAddress(podCidr: string): string {
  const [base, bits] = podCidr.split("/");
  const prefix = Number(bits);
  if (!base || !isIPv4(base) || !Number.isInteger(prefix) || prefix < 0 || prefix > 32) throw new Error(`not an IPv4 CIDR: ${podCidr}`);
  const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
  return numberToIp((ipToNumber(base) & mask) >>> 0);
}

/** The annotations a node with a VXLAN device writes on its Node (pure). */
export function vtepAnnotations(data: VtepData): Record<string, string> {
  return { [BACKEND_TYPE_ANNOTATION]: "vxlan", [BACKEND_DATA_ANNOTATION]: JSON.stringify(data) };
}

/** A Node's published VTEP, or undefined when it has none (a host-gw node, an older agent, bad data). */
export function parseVtep(annotations: Readonly<Record<string, string>> | undefined): VtepData | undefined {
  if (annotations?.[BACKEND_TYPE_ANNOTATION] !== "vxlan") return undefined;
  try {
    const d = JSON.parse(annotations[BACKEND_DATA_ANNOTATION] ?? "") as Partial<VtepData>;
    if (typeof d.vni !== "number" || typeof d.port !== "number" || typeof d.mac !== "string" || typeof d.vtep !== "string") return undefined;
    if (!/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/.test(d.mac) || !isIPv4(d.vtep)) return undefined;
    return { vni: d.vni, port: d.port, mac: d.mac, vtep: d.vtep };
  } catch {
    return undefined;
  }
}

/** The `ip -batch` lines making the neighbour entries (VTEP address → MAC) `desired` out of `current` (pure). */
export function neighScript(current: readonly { ip: string; mac: string; permanent?: boolean }[], desired: readonly VxlanPeer[]): string[] {
  const want = new Map(desired.map((p) => [p.vtep, p.mac]));
  const lines: string[] = [];
  for (const n of current) if (!want.has(n.ip)) lines.push(`neigh del ${n.ip} dev ${VXLAN_DEVICE}`);
  const have = new Map(current.map((n) => [n.ip, n]));
  for (const [ip, mac] of want) {
    const h = have.get(ip);
    if (!h || h.mac !== mac || !h.permanent) lines.push(`neigh replace ${ip} lladdr ${mac} dev ${VXLAN_DEVICE} nud permanent`);
  }
  return lines;
}

/** The `bridge -batch` lines making the FDB entries (MAC → InternalIP) `desired` out of `current` (pure). */
export function fdbScript(current: readonly { mac: string; dst: string }[], desired: readonly VxlanPeer[]): string[] {
  const want = new Map(desired.map((p) => [p.mac, p.underlay]));
  const lines: string[] = [];
  for (const f of current) if (want.get(f.mac) !== f.dst) lines.push(`fdb del ${f.mac} dev ${VXLAN_DEVICE} dst ${f.dst} self`);
  const have = new Set(current.map((f) => `${f.mac} ${f.dst}`));
  for (const [mac, dst] of want) if (!have.has(`${mac} ${dst}`)) lines.push(`fdb append ${mac} dev ${VXLAN_DEVICE} dst ${dst} self permanent`);
  return lines;
}

/** Neighbour entries on the device (`ip -j -4 neigh show dev choreo.vx`). */
export function parseNeigh(json: string): { ip: string; mac: string; permanent?: boolean }[] {
  const rows = JSON.parse(json || "[]") as { dst?: string; lladdr?: string; state?: string[] }[];
  return rows.filter((r) => r.dst).map((r) => ({ ip: r.dst as string, mac: r.lladdr ?? "", permanent: (r.state ?? []).includes("PERMANENT") }));
}

/** Unicast FDB entries with a remote on the device (`bridge -j fdb show dev choreo.vx`). */
export function parseFdb(json: string): { mac: string; dst: string }[] {
  const rows = JSON.parse(json || "[]") as { mac?: string; dst?: string }[];
  return rows.filter((r) => r.mac && r.dst).map((r) => ({ mac: r.mac as string, dst: r.dst as string }));
}

/** The device as `ip -d -j link show choreo.vx` prints it. */
export interface VxlanLink {
  mtu: number;
  mac: string;
  up: boolean;
  vni?: number;
  local?: string;
  port?: number;
  underlay?: string;
  learning?: boolean;
}

/** Reads `ip -d -j link show` of the device. */
export function parseVxlanLink(json: string): VxlanLink | undefined {
  const [l] = JSON.parse(json || "[]") as {
    mtu?: number;
    address?: string;
    flags?: string[];
    linkinfo?: { info_kind?: string; info_data?: { id?: number; local?: string; port?: number; link?: string; learning?: boolean } };
  }[];
  if (!l) return undefined;
  const d = l.linkinfo?.info_kind === "vxlan" ? l.linkinfo.info_data : undefined;
  return {
    mtu: l.mtu ?? 0,
    mac: l.address ?? "",
    up: (l.flags ?? []).includes("UP"),
    vni: d?.id,
    local: d?.local,
    port: d?.port,
    underlay: d?.link,
    learning: d?.learning,
  };
}

/** What the device must be. */
export interface VxlanSpec {
  mac: string;
  vtep: string;
  /** The node's InternalIP: the source of the encapsulated packets. */
  local: string;
  /** The interface holding it. */
  underlay: string;
  mtu: number;
  vni: number;
  port: number;
}

/**
 * The `ip -batch` lines getting the device from `have` (undefined: none) to
 * `spec` with the VTEP address only (pure). A device whose VXLAN settings
 * differ (another VNI, port, local address or underlay) is deleted and made
 * again: the kernel cannot change them in place.
 */
export function deviceScript(have: VxlanLink | undefined, addrs: readonly string[], spec: VxlanSpec): string[] {
  const lines: string[] = [];
  const fresh =
    !have || have.vni !== spec.vni || have.local !== spec.local || have.port !== spec.port || have.underlay !== spec.underlay || have.learning !== false;
  if (have && fresh) lines.push(`link del ${VXLAN_DEVICE}`);
  if (fresh) {
    lines.push(
      `link add ${VXLAN_DEVICE} address ${spec.mac} mtu ${spec.mtu} type vxlan id ${spec.vni} local ${spec.local} dev ${spec.underlay} dstport ${spec.port} nolearning`,
    );
  } else {
    if (have.mac !== spec.mac) lines.push(`link set ${VXLAN_DEVICE} address ${spec.mac}`);
    if (have.mtu !== spec.mtu) lines.push(`link set ${VXLAN_DEVICE} mtu ${spec.mtu}`);
  }
  const want = `${spec.vtep}/32`;
  if (fresh || addrs.length !== 1 || addrs[0] !== want) {
    if (!fresh && addrs.length) lines.push(`addr flush dev ${VXLAN_DEVICE}`);
    lines.push(`addr add ${want} dev ${VXLAN_DEVICE}`);
  }
  if (fresh || !have.up) lines.push(`link set ${VXLAN_DEVICE} up`);
  return lines;
}

/** The interface holding `address` and its MTU, from `ip -j -4 addr show`. */
export function underlayOf(json: string, address: string): { ifname: string; mtu: number } | undefined {
  const links = JSON.parse(json || "[]") as { ifname?: string; mtu?: number; addr_info?: { local?: string }[] }[];
  const l = links.find((x) => (x.addr_info ?? []).some((a) => a.local === address));
  return l?.ifname ? { ifname: l.ifname, mtu: l.mtu ?? 1500 } : undefined;
}

/**
 * Makes the device right (created, its settings, its one address, up).
 * Returns whether it changed anything. Fails with the kernel's message: a
 * port taken by someone else (`Address already in use` when it goes up),
 * another device on the same VNI and port.
 */
export async function ensureVxlanDevice(spec: VxlanSpec): Promise<boolean> {
  const have = parseVxlanLink(await run("ip", ["-d", "-j", "link", "show", VXLAN_DEVICE]).catch(() => ""));
  const addrs = have ? vxlanAddrs(await run("ip", ["-j", "-4", "addr", "show", "dev", VXLAN_DEVICE])) : [];
  const script = deviceScript(have, addrs, spec);
  if (script.length === 0) return false;
  try {
    await run("ip", ["-batch", "-"], { input: script.join("\n") + "\n" });
  } catch (err) {
    // Half made (it went down at "up": the port is taken): leave nothing that looks right to the next pass.
    if (!have) await run("ip", ["link", "del", VXLAN_DEVICE]).catch(() => undefined);
    throw err;
  }
  return true;
}

function vxlanAddrs(json: string): string[] {
  const [l] = JSON.parse(json || "[]") as { addr_info?: { local?: string; prefixlen?: number }[] }[];
  return (l?.addr_info ?? []).map((a) => `${a.local ?? ""}/${a.prefixlen ?? ""}`);
}

/**
 * The filter chain that lets the overlay's UDP port be reached only from other nodes' InternalIPs: a
 * VXLAN packet is decapsulated straight into the pod network, so anyone who could reach the port (a
 * pod, another machine on the underlay) could otherwise inject packets into any pod — Calico drops
 * VXLAN from anything but its known hosts the same way. One per network namespace, as the device.
 */
export const VXLAN_GUARD_CHAIN = "CHO-VXLAN-IN";

/** The INPUT rule sending the overlay's port to the guard (as iptables-save prints it). */
export function vxlanGuardJump(port: number): string {
  return `-A INPUT -p udp -m udp --dport ${port} -j ${VXLAN_GUARD_CHAIN}`;
}

/**
 * An `iptables-restore --noflush` script (re)writing the guard: RETURN (on to the rest of INPUT) for
 * each peer's InternalIP, DROP for any other source. Declaring the chain flushes it, so the script is
 * the whole chain, applied atomically.
 */
export function vxlanGuardScript(peers: readonly string[]): string {
  const lines = ["*filter", `:${VXLAN_GUARD_CHAIN} - [0:0]`];
  for (const ip of [...new Set(peers)].filter((a) => isIPv4(a)).sort()) lines.push(`-A ${VXLAN_GUARD_CHAIN} -s ${ip}/32 -j RETURN`);
  lines.push(`-A ${VXLAN_GUARD_CHAIN} -j DROP`, "COMMIT");
  return lines.join("\n") + "\n";
}

/** Writes the guard for `peers` and, when missing, its jump from INPUT for `port` (first in INPUT). */
export async function ensureVxlanGuard(port: number, peers: readonly string[]): Promise<void> {
  await restore(vxlanGuardScript(peers));
  const saved = await saveRules();
  // Jumps for another port (a changed --vxlan-port) go; the one for `port` is put first if missing.
  const stale = (saved.get("filter")?.rules ?? []).filter(
    (r) => r.startsWith("-A INPUT ") && r.endsWith(`-j ${VXLAN_GUARD_CHAIN}`) && r !== vxlanGuardJump(port),
  );
  const script = stale.map((r) => `-D${r.slice(2)}`);
  if (!hasRule(saved, "filter", vxlanGuardJump(port)))
    script.push(
      `-I${vxlanGuardJump(port)
        .slice(2)
        .replace(/^INPUT /, "INPUT 1 ")}`,
    );
  if (script.length) await restore(["*filter", ...script, "COMMIT"].join("\n") + "\n");
}

/** Removes the guard chain and its jumps; none is fine. */
export async function removeVxlanGuard(): Promise<void> {
  await restore(removalScript(await saveRules(), (table, chain) => table === "filter" && chain === VXLAN_GUARD_CHAIN));
}

/** Removes the device (its routes, neighbour and FDB entries go with it) and its guard; a missing device is fine. */
export async function removeVxlan(): Promise<void> {
  await removeVxlanGuard();
  try {
    await run("ip", ["link", "del", VXLAN_DEVICE]);
  } catch (err) {
    if (!(err instanceof CommandError) || !/Cannot find device|does not exist/.test(err.stderr)) throw err;
  }
}
