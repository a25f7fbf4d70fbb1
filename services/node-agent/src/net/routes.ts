import { isIPv4 } from "node:net";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { ApiClient } from "@choreo/kit/client";
import type { Node } from "@choreo/kit/gen/choreo/core/v1/core";
import { Informer } from "@choreo/kit/informer";
import { sleep, type Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import { emptyMeta } from "@choreo/kit";
import { retryOnConflict } from "@choreo/kit/client";
import { ipToNumber } from "../runtime/ip-pool.js";
import { run } from "../exec.js";
import {
  BACKEND_DATA_ANNOTATION,
  BACKEND_TYPE_ANNOTATION,
  VXLAN_DEVICE,
  VXLAN_OVERHEAD,
  VXLAN_PORT,
  VXLAN_VNI,
  ensureVxlanDevice,
  fdbScript,
  neighScript,
  parseFdb,
  parseNeigh,
  parseVtep,
  removeVxlan,
  ensureVxlanGuard,
  underlayOf,
  vtepAddress,
  vtepAnnotations,
  vtepMac,
  type Backend,
  type VtepData,
  type VxlanPeer,
} from "./vxlan.js";

/**
 * The routing protocol number choreo's routes carry (`ip route … proto 199`),
 * so the agent finds, rewrites and removes its own routes and no one else's.
 */
export const ROUTE_PROTO = "199";

/**
 * One route to another node's pods: its pod CIDR via its InternalIP
 * (host-gw), or via its VTEP address on the overlay device (`dev`, onlink).
 */
export interface PodRoute {
  dst: string;
  via: string;
  dev?: string;
}

/** Options of {@link NodeRoutes}. */
export interface NodeRoutesOptions {
  node: string;
  /** This node's pod CIDR (never routed away). */
  podCidr: string;
  /** Every node's pods together: an InternalIP inside it is a bridge address of an agent on this machine. */
  clusterCidr: string;
  /** This node's InternalIP: the overlay's local end (no overlay when it is not an address of this machine). */
  nodeIp?: string;
  /** host-gw, vxlan, or auto (default: host-gw to a peer on a connected network, vxlan otherwise). */
  backend?: Backend;
  /** The overlay's UDP port (default 4789). */
  vxlanPort?: number;
  client: ApiClient;
  nc: NatsConnection;
  jsm: JetStreamManager;
  log: Logger;
  /** How often the routes are checked against the kernel's even without a change (default 30 s). */
  resyncMs?: number;
}

/** Whether IPv4 `ip` lies in `cidr`. */
export function inCidr(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split("/");
  const prefix = Number(bits);
  if (!isIPv4(ip) || !base || !isIPv4(base) || !Number.isInteger(prefix)) return false;
  const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
  return (ipToNumber(ip) & mask) >>> 0 === (ipToNumber(base) & mask) >>> 0;
}

/** Another node this one routes to: its name, pod CIDR, InternalIP and published VTEP (if any). */
export interface Peer {
  node: string;
  dst: string;
  ip: string;
  vtep?: VtepData;
}

/** What identifies this node among the Nodes. */
export interface RouteSelf {
  node: string;
  podCidr: string;
  clusterCidr: string;
  localAddresses: ReadonlySet<string>;
}

/**
 * The other nodes this one routes to (pure): every node with a pod CIDR and
 * an IPv4 InternalIP, sorted by CIDR. Left out: this node's own CIDR, a
 * node whose address is one of ours (agents on one machine) or inside the
 * cluster CIDR (an agent on this machine whose InternalIP is its bridge: the
 * kernel's connected route already reaches it).
 */
export function peers(nodes: readonly Node[], self: RouteSelf): Peer[] {
  const out: Peer[] = [];
  for (const n of nodes) {
    const name = n.metadata?.name ?? "";
    const dst = n.spec?.podCidr ?? "";
    const ip = n.status?.addresses.find((a) => a.type === "InternalIP")?.address ?? "";
    if (!name || name === self.node || !dst || !ip || dst === self.podCidr) continue;
    if (!isIPv4(ip) || self.localAddresses.has(ip) || inCidr(ip, self.clusterCidr)) continue;
    const vtep = parseVtep(n.metadata?.annotations);
    out.push({ node: name, dst, ip, ...(vtep ? { vtep } : {}) });
  }
  return out.sort((a, b) => a.dst.localeCompare(b.dst));
}

/** The host-gw routes to every peer (pure): what {@link plan} gives with `--backend host-gw`. */
export function desiredRoutes(nodes: readonly Node[], self: RouteSelf): PodRoute[] {
  return peers(nodes, self).map((p) => ({ dst: p.dst, via: p.ip }));
}

/** What one pass programs: the routes, the overlay's remote ends, each peer's backend, and the peers not reachable. */
export interface RoutePlan {
  routes: PodRoute[];
  vxlan: VxlanPeer[];
  backends: Record<string, "host-gw" | "vxlan">;
  /** Peers that need the overlay but publish no matching VTEP (host-gw only, another VNI or port): no route. */
  unreachable: string[];
}

/**
 * Decides per peer (pure): host-gw when the backend says so, or (auto) when
 * its InternalIP is on a connected network (`onLink`: `ip route get` shows
 * no gateway); otherwise the overlay — when this node has one (`overlay`)
 * and the peer published a VTEP on the same VNI and port.
 */
export function plan(ps: readonly Peer[], opts: { backend: Backend; onLink: (ip: string) => boolean; overlay: boolean; vni: number; port: number }): RoutePlan {
  const out: RoutePlan = { routes: [], vxlan: [], backends: {}, unreachable: [] };
  for (const p of ps) {
    const hostGw = opts.backend === "host-gw" || (opts.backend === "auto" && opts.onLink(p.ip));
    if (hostGw) {
      out.routes.push({ dst: p.dst, via: p.ip });
      out.backends[p.node] = "host-gw";
    } else if (opts.overlay && p.vtep && p.vtep.vni === opts.vni && p.vtep.port === opts.port) {
      out.routes.push({ dst: p.dst, via: p.vtep.vtep, dev: VXLAN_DEVICE });
      out.vxlan.push({ vtep: p.vtep.vtep, mac: p.vtep.mac, underlay: p.ip });
      out.backends[p.node] = "vxlan";
    } else {
      out.unreachable.push(p.node);
    }
  }
  return out;
}

const routeLine = (verb: string, r: PodRoute): string =>
  r.dev ? `route ${verb} ${r.dst} via ${r.via} dev ${r.dev} onlink proto ${ROUTE_PROTO}` : `route ${verb} ${r.dst} via ${r.via} proto ${ROUTE_PROTO}`;

/** The `ip -batch` lines turning `current` (our routes in the kernel) into `desired` (pure). */
export function routeScript(current: readonly PodRoute[], desired: readonly PodRoute[]): string[] {
  const want = new Map(desired.map((r) => [r.dst, r]));
  const have = new Map(current.map((r) => [r.dst, r]));
  const same = (a: PodRoute, b: PodRoute): boolean => a.via === b.via && (b.dev ? a.dev === b.dev : a.dev !== VXLAN_DEVICE);
  const lines: string[] = [];
  for (const [dst, r] of have) if (!want.has(dst)) lines.push(routeLine("del", r));
  for (const [dst, r] of want) {
    const h = have.get(dst);
    if (!h || !same(h, r)) lines.push(routeLine("replace", r));
  }
  return lines;
}

/** Our routes as `ip -j route show proto 199` prints them. */
export function parseRoutes(json: string): PodRoute[] {
  const rows = JSON.parse(json || "[]") as { dst?: string; gateway?: string; dev?: string }[];
  return rows
    .filter((r) => r.dst && r.gateway)
    .map((r) => ({ dst: r.dst as string, via: r.gateway as string, ...(r.dev === VXLAN_DEVICE ? { dev: VXLAN_DEVICE } : {}) }));
}

/**
 * The addresses `ip -j -batch` of `route get` lines found on a connected
 * network (no gateway), from its output (one JSON array a line).
 */
export function parseOnLink(out: string): Set<string> {
  const onLink = new Set<string>();
  for (const line of out.split("\n")) {
    if (!line.trim().startsWith("[")) continue;
    for (const r of JSON.parse(line) as { dst?: string; gateway?: string }[]) if (r.dst && !r.gateway) onLink.add(r.dst);
  }
  return onLink;
}

/** The addresses of this network namespace (`ip -j addr`). */
export function parseAddresses(json: string): Set<string> {
  const links = JSON.parse(json || "[]") as { addr_info?: { local?: string }[] }[];
  return new Set(links.flatMap((l) => (l.addr_info ?? []).map((a) => a.local ?? "")).filter(Boolean));
}

/** The parts of a Node the routes depend on: an update changing none of them needs no pass. */
function routeKey(n: Node): string {
  const a = n.metadata?.annotations ?? {};
  return JSON.stringify([
    n.spec?.podCidr,
    n.status?.addresses.find((x) => x.type === "InternalIP")?.address,
    a[BACKEND_TYPE_ANNOTATION],
    a[BACKEND_DATA_ANNOTATION],
  ]);
}

/**
 * Routes to the other nodes' pods: watches every Node and keeps one kernel
 * route per other node's pod CIDR, tagged `proto 199` — via its InternalIP
 * when that is on a connected network (host-gw), via its VTEP address on
 * the `choreo.vx` VXLAN device otherwise, with the neighbour and FDB entries
 * the overlay needs (vxlan.ts). This node's own VTEP (device MAC, address)
 * goes on its Node's annotations for the others. A change rewrites what
 * differs; a resync puts back what someone removed. A node that is gone
 * loses its route and entries. Everything stays when the agent stops (its
 * pods keep talking across a restart); `choreo down`'s clean-up removes it.
 */
export class NodeRoutes implements Runnable {
  readonly name = "node-routes";
  readonly nodes: Informer<"node">;
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> = Promise.resolve();
  private dirty = false;
  private readonly backend: Backend;
  private readonly port: number;
  private backends: Record<string, string> = {};
  private unreachable = "";
  private routedPeers: { node: string; ip: string }[] = [];
  /** Rewrites applied (tests wait on it). */
  syncs = 0;

  constructor(private readonly opts: NodeRoutesOptions) {
    this.backend = opts.backend ?? "auto";
    this.port = opts.vxlanPort ?? VXLAN_PORT;
    this.nodes = new Informer({ client: opts.client, nc: opts.nc, jsm: opts.jsm, log: opts.log, kind: "node" });
    const changed = (): void => this.schedule();
    this.nodes.addEventHandler({
      onAdd: changed,
      // Heartbeats (status only) change nothing routed.
      onUpdate: (old, next) => {
        if (routeKey(old) !== routeKey(next)) this.schedule();
      },
      onDelete: changed,
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    const informer = this.nodes.start(signal);
    const resync = (async () => {
      await this.nodes.waitForSync(signal).catch(() => undefined);
      while (!signal.aborted) {
        this.schedule();
        await sleep(this.opts.resyncMs ?? 30_000, signal);
      }
    })();
    try {
      await informer;
    } finally {
      clearTimeout(this.timer);
      await resync;
      await this.syncing;
    }
  }

  /** The peers the last pass routed to (on other machines), with their InternalIPs: what the peer probe asks. */
  routed(): readonly { node: string; ip: string }[] {
    return this.routedPeers;
  }

  private schedule(): void {
    this.dirty = true;
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.syncing = this.syncing.then(() => this.sync());
    }, 50);
  }

  /** One pass: what the Nodes say against what the kernel holds. */
  async sync(): Promise<void> {
    if (!this.dirty) return;
    this.dirty = false;
    const log = this.opts.log;
    try {
      const addrJson = await run("ip", ["-j", "-4", "addr", "show"]);
      const ps = peers(this.nodes.list(), { ...this.opts, localAddresses: parseAddresses(addrJson) });
      const overlay = await this.overlay(
        addrJson,
        ps.map((p) => p.ip),
      );
      const onLink = this.backend === "auto" ? await this.onLink(ps.map((p) => p.ip)) : new Set<string>();
      const p = plan(ps, { backend: this.backend, onLink: (ip) => onLink.has(ip), overlay, vni: VXLAN_VNI, port: this.port });
      this.report(p);
      this.routedPeers = ps.filter((x) => p.backends[x.node]).map((x) => ({ node: x.node, ip: x.ip }));
      // The overlay's entries failing (no `bridge` tool, a refused entry) does not keep the host-gw routes from being written.
      const overlayChanges = overlay
        ? await this.writeOverlay(p.vxlan).catch((err: unknown) => {
            this.dirty = true;
            log.warn({ err }, "vxlan neighbour and fdb entries not written");
            return 0;
          })
        : 0;
      const changes = overlayChanges + (await this.writeRoutes(p.routes));
      this.syncs++;
      if (changes > 0) log.info({ routes: p.routes.length, vxlan: p.vxlan.length, changes }, "routes to other nodes' pods written");
    } catch (err) {
      this.dirty = true;
      log.warn({ err }, "routes to other nodes' pods not written");
    }
  }

  /**
   * Readies this node's end of the overlay when some remote node may need
   * it (its device, its annotations); with `--backend host-gw` takes them
   * away. Returns whether the device is there to route through.
   */
  private async overlay(addrJson: string, peerIps: readonly string[]): Promise<boolean> {
    const { node, podCidr, clusterCidr, nodeIp = "", log } = this.opts;
    const underlay = nodeIp && !inCidr(nodeIp, clusterCidr) ? underlayOf(addrJson, nodeIp) : undefined;
    if (this.backend === "host-gw" || !underlay) {
      if (this.backend === "host-gw") await removeVxlan();
      await this.publish(undefined);
      return false;
    }
    if (peerIps.length === 0) return false; // agents on one machine: nothing to carry, no device
    const data: VtepData = { vni: VXLAN_VNI, port: this.port, mac: vtepMac(node), vtep: vtepAddress(podCidr) };
    try {
      // The port answers other nodes only, from before the device is up (vxlan.ts VXLAN_GUARD_CHAIN); every pass, so a flushed guard comes back.
      await ensureVxlanGuard(this.port, peerIps);
      if (await ensureVxlanDevice({ ...data, local: nodeIp, underlay: underlay.ifname, mtu: underlay.mtu - VXLAN_OVERHEAD })) {
        log.info({ device: VXLAN_DEVICE, vni: data.vni, port: data.port, mac: data.mac, vtep: data.vtep, underlay: underlay.ifname }, "vxlan device ready");
      }
    } catch (err) {
      this.dirty = true;
      log.warn({ err, device: VXLAN_DEVICE, port: this.port }, "vxlan device not made (another on this VNI and port, or the port taken: see --vxlan-port)");
      return false;
    }
    await this.publish(data);
    return true;
  }

  /** Writes (or, undefined, removes) this node's VTEP annotations on its own Node when they differ. */
  private async publish(data: VtepData | undefined): Promise<void> {
    const self = this.nodes.list().find((n) => n.metadata?.name === this.opts.node);
    if (!self) return; // not registered yet: its add event brings another pass
    const want = data ? vtepAnnotations(data) : {};
    const have = self.metadata?.annotations ?? {};
    const keys = [BACKEND_TYPE_ANNOTATION, BACKEND_DATA_ANNOTATION];
    if (keys.every((k) => have[k] === want[k])) return;
    const nodes = this.opts.client.typed("node");
    await retryOnConflict(async () => {
      const n = await nodes.get("", this.opts.node);
      const annotations = { ...n.metadata?.annotations };
      for (const k of keys) delete annotations[k];
      Object.assign(annotations, want);
      await nodes.update({ ...n, metadata: { ...(n.metadata ?? emptyMeta()), annotations } });
    });
    this.opts.log.info({ vtep: data?.vtep, mac: data?.mac }, data ? "vxlan endpoint published on the node" : "vxlan endpoint removed from the node");
  }

  /** The peers' addresses on a connected network (`ip route get` without a gateway): one `ip -batch`, one spawn each if it fails. */
  private async onLink(ips: readonly string[]): Promise<Set<string>> {
    if (ips.length === 0) return new Set();
    try {
      return parseOnLink(await run("ip", ["-j", "-batch", "-"], { input: ips.map((ip) => `route get ${ip}`).join("\n") + "\n" }));
    } catch {
      // One unreachable address stops the batch: ask one by one, an unreachable one is not on-link.
      const outs = await Promise.all(ips.map((ip) => run("ip", ["-j", "route", "get", ip]).catch(() => "")));
      return parseOnLink(outs.join("\n"));
    }
  }

  /** Neighbour and FDB entries of the overlay's remote ends. Returns how many lines it wrote. */
  private async writeOverlay(want: readonly VxlanPeer[]): Promise<number> {
    const neigh = neighScript(parseNeigh(await run("ip", ["-j", "-4", "neigh", "show", "dev", VXLAN_DEVICE])), want);
    const fdb = fdbScript(parseFdb(await run("bridge", ["-j", "fdb", "show", "dev", VXLAN_DEVICE])), want);
    if (neigh.length) await run("ip", ["-force", "-batch", "-"], { input: neigh.join("\n") + "\n" });
    if (fdb.length) await run("bridge", ["-force", "-batch", "-"], { input: fdb.join("\n") + "\n" });
    return neigh.length + fdb.length;
  }

  private async writeRoutes(want: readonly PodRoute[]): Promise<number> {
    const have = parseRoutes(await run("ip", ["-j", "-4", "route", "show", "proto", ROUTE_PROTO]));
    const script = routeScript(have, want);
    if (script.length === 0) return 0;
    // -force: one route the kernel refuses (a gateway off every connected network) does not stop the others.
    await run("ip", ["-force", "-batch", "-"], { input: script.join("\n") + "\n" }).catch((err: unknown) => {
      this.opts.log.warn({ err, script }, "some routes to other nodes' pods were refused");
      this.dirty = true; // tried again on the next change or resync
    });
    return script.length;
  }

  /** Logs each peer's backend when it changes, and the peers left unrouted. */
  private report(p: RoutePlan): void {
    for (const [peer, backend] of Object.entries(p.backends)) {
      if (this.backends[peer] !== backend) this.opts.log.info({ peer, backend }, "peer routed");
    }
    this.backends = p.backends;
    const unreachable = p.unreachable.join(",");
    if (unreachable && unreachable !== this.unreachable) {
      this.opts.log.warn({ peers: p.unreachable, backend: this.backend }, "peers off every connected network without a vxlan endpoint: not routed");
    }
    this.unreachable = unreachable;
  }
}

/** Removes every route choreo wrote (`choreo down`, a node's clean-up). */
export async function removeRoutes(): Promise<void> {
  await run("ip", ["-4", "route", "flush", "proto", ROUTE_PROTO]).catch(() => undefined);
}
