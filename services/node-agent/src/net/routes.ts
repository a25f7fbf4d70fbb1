import { isIPv4 } from "node:net";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { ApiClient } from "@choreo/kit/client";
import type { Node } from "@choreo/kit/gen/choreo/core/v1/core";
import { Informer } from "@choreo/kit/informer";
import { sleep, type Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import { ipToNumber } from "../runtime/ip-pool.js";
import { run } from "../exec.js";

/**
 * The routing protocol number choreo's routes carry (`ip route … proto 199`),
 * so the agent finds, rewrites and removes its own routes and no one else's.
 */
export const ROUTE_PROTO = "199";

/** One route to another node's pods: its pod CIDR via its InternalIP. */
export interface PodRoute {
  dst: string;
  via: string;
}

/** Options of {@link NodeRoutes}. */
export interface NodeRoutesOptions {
  node: string;
  /** This node's pod CIDR (never routed away). */
  podCidr: string;
  /** Every node's pods together: an InternalIP inside it is a bridge address of an agent on this machine. */
  clusterCidr: string;
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

/**
 * The routes this node wants (pure): for every other node with a pod CIDR
 * and an InternalIP, the CIDR via that address — host-gw, as flannel's
 * backend of that name: the nodes share an L2 segment. Left out: this
 * node's own CIDR, a node whose address is one of ours (agents on one
 * machine) or inside the cluster CIDR (an agent on this machine whose
 * InternalIP is its bridge: the kernel's connected route already reaches it).
 */
export function desiredRoutes(
  nodes: readonly Node[],
  self: { node: string; podCidr: string; clusterCidr: string; localAddresses: ReadonlySet<string> },
): PodRoute[] {
  const routes: PodRoute[] = [];
  for (const n of nodes) {
    const name = n.metadata?.name ?? "";
    const dst = n.spec?.podCidr ?? "";
    const via = n.status?.addresses.find((a) => a.type === "InternalIP")?.address ?? "";
    if (!name || name === self.node || !dst || !via || dst === self.podCidr) continue;
    if (!isIPv4(via) || self.localAddresses.has(via) || inCidr(via, self.clusterCidr)) continue;
    routes.push({ dst, via });
  }
  return routes.sort((a, b) => a.dst.localeCompare(b.dst));
}

/** The `ip -batch` lines turning `current` (our routes in the kernel) into `desired` (pure). */
export function routeScript(current: readonly PodRoute[], desired: readonly PodRoute[]): string[] {
  const want = new Map(desired.map((r) => [r.dst, r.via]));
  const have = new Map(current.map((r) => [r.dst, r.via]));
  const lines: string[] = [];
  for (const [dst, via] of have) if (!want.has(dst)) lines.push(`route del ${dst} via ${via} proto ${ROUTE_PROTO}`);
  for (const [dst, via] of want) if (have.get(dst) !== via) lines.push(`route replace ${dst} via ${via} proto ${ROUTE_PROTO}`);
  return lines;
}

/** Our routes as `ip -j route show proto 199` prints them. */
export function parseRoutes(json: string): PodRoute[] {
  const rows = JSON.parse(json || "[]") as { dst?: string; gateway?: string }[];
  return rows.filter((r) => r.dst && r.gateway).map((r) => ({ dst: r.dst as string, via: r.gateway as string }));
}

/** The addresses of this network namespace (`ip -j addr`). */
export function parseAddresses(json: string): Set<string> {
  const links = JSON.parse(json || "[]") as { addr_info?: { local?: string }[] }[];
  return new Set(links.flatMap((l) => (l.addr_info ?? []).map((a) => a.local ?? "")).filter(Boolean));
}

/**
 * Routes to the other nodes' pods (host-gw): watches every Node and keeps
 * one kernel route per other node's pod CIDR via its InternalIP, tagged
 * `proto 199`. A change rewrites what differs in one `ip -batch`; a resync
 * puts back what someone removed. A node that is gone loses its route.
 * Routes stay when the agent stops (its pods keep talking across a restart);
 * `choreo down`'s clean-up removes them. Nodes on different L2 segments
 * would need an overlay (VXLAN) instead: a route whose gateway is not on a
 * connected network is refused by the kernel and logged.
 */
export class NodeRoutes implements Runnable {
  readonly name = "node-routes";
  readonly nodes: Informer<"node">;
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> = Promise.resolve();
  private dirty = false;
  /** Rewrites applied (tests wait on it). */
  syncs = 0;

  constructor(private readonly opts: NodeRoutesOptions) {
    this.nodes = new Informer({ client: opts.client, nc: opts.nc, jsm: opts.jsm, log: opts.log, kind: "node" });
    const changed = (): void => this.schedule();
    this.nodes.addEventHandler({ onAdd: changed, onUpdate: changed, onDelete: changed });
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
    try {
      const local = parseAddresses(await run("ip", ["-j", "-4", "addr", "show"]));
      const want = desiredRoutes(this.nodes.list(), { ...this.opts, localAddresses: local });
      const have = parseRoutes(await run("ip", ["-j", "-4", "route", "show", "proto", ROUTE_PROTO]));
      const script = routeScript(have, want);
      if (script.length === 0) return;
      // -force: one route the kernel refuses (a gateway off every connected network) does not stop the others.
      await run("ip", ["-force", "-batch", "-"], { input: script.join("\n") + "\n" }).catch((err: unknown) => {
        this.opts.log.warn({ err, script }, "some routes to other nodes' pods were refused");
        this.dirty = true; // tried again on the next change or resync
      });
      this.syncs++;
      this.opts.log.info({ routes: want.length, changes: script.length }, "routes to other nodes' pods written");
    } catch (err) {
      this.dirty = true;
      this.opts.log.warn({ err }, "routes to other nodes' pods not written");
    }
  }
}

/** Removes every route choreo wrote (`choreo down`, a node's clean-up). */
export async function removeRoutes(): Promise<void> {
  await run("ip", ["-4", "route", "flush", "proto", ROUTE_PROTO]).catch(() => undefined);
}
