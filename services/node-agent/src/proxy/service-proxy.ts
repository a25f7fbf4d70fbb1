import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Registry } from "prom-client";
import type { ApiClient } from "@choreo/kit/client";
import { Informer } from "@choreo/kit/informer";
import { runAll, sleep, type Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import { getOrCreateGauge } from "@choreo/kit/metrics";
import { CommandError, run } from "../exec.js";
import { chainsOf, hasRule, removalScript, restore, saveRules } from "../net/iptables.js";
import { guardLocalnet } from "../net/localnet.js";
import { isProxyChain, proxyJumps, renderBootstrap, renderProxyRules } from "./rules.js";

/** Options of a node's service proxy. */
export interface ServiceProxyOptions {
  node: string;
  client: ApiClient;
  nc: NatsConnection;
  jsm: JetStreamManager;
  log: Logger;
  /** The node's chain prefix (`NAMES.chainPrefix(node)`); agents on one machine each have their own. */
  chainPrefix: string;
  /** Every pod's address range, default 10.244.0.0/16. */
  clusterCidr?: string;
  /** How long changes are gathered before one rewrite (default 50 ms). */
  debounceMs?: number;
  /** The peers this node cannot reach (net/peer-probe.ts): their endpoints get no new connections while another endpoint is left. */
  peers?: PeerReachability;
  registry?: Registry;
}

/** Which peer nodes to leave out, and a way to hear when that changes. */
export interface PeerReachability {
  unreachable(): ReadonlySet<string>;
  onChange(fn: () => void): void;
}

/**
 * The service data plane of one node (kube-proxy in iptables mode): watches
 * every Service and Endpoints and, a moment after a change, rewrites the
 * node's proxy chains in one `iptables-restore`. On stop its chains and the
 * jumps to them are removed; other agents' identical chains keep serving.
 */
export class ServiceProxy implements Runnable {
  readonly name = "service-proxy";
  /** Every Service and Endpoints: the node's DNS responder reads these caches too. */
  readonly services: Informer<"service">;
  readonly endpoints: Informer<"endpoints">;
  private written = { filter: [] as string[], nat: [] as string[] };
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;
  private dirty = false;
  private stopped = false;
  private failures = 0;
  /** How many rewrites were applied (tests wait on it). */
  syncs = 0;
  /** Every ready address of every Endpoints, rebuilt on the first question after a change (undefined: stale). */
  private readyIps: Set<string> | undefined;
  /** The nodes the ready addresses run on, likewise. */
  private readyNodes: Set<string> | undefined;
  /** Backends left out for an unreachable peer's sake at the last rewrite. */
  leftOut = 0;
  private readonly leftOutGauge?: (n: number) => void;
  private leftOutIps = new Set<string>();
  private conntrackMissing = false;

  constructor(private readonly opts: ServiceProxyOptions) {
    const common = { client: opts.client, nc: opts.nc, jsm: opts.jsm, log: opts.log };
    this.services = new Informer({ ...common, kind: "service" });
    this.endpoints = new Informer({ ...common, kind: "endpoints" });
    const changed = { onAdd: () => this.schedule(), onUpdate: () => this.schedule(), onDelete: () => this.schedule() };
    this.services.addEventHandler(changed);
    this.endpoints.addEventHandler(changed);
    const stale = (): void => {
      this.readyIps = undefined;
      this.readyNodes = undefined;
    };
    this.endpoints.addEventHandler({ onAdd: stale, onUpdate: stale, onDelete: stale });
    opts.peers?.onChange(() => this.schedule());
    if (opts.registry) {
      const g = getOrCreateGauge(
        opts.registry,
        "choreo_service_proxy_endpoints_left_out",
        "Service endpoints (per service port) given no new connections because their node is unreachable from this one",
        ["node"],
      );
      this.leftOutGauge = (n) => g.set({ node: opts.node }, n);
    }
  }

  /** The nodes some ready endpoint runs on (`nodeName`), this one aside: the peers worth probing. */
  endpointNodes(): ReadonlySet<string> {
    if (!this.readyNodes) {
      const nodes = new Set<string>();
      for (const ep of this.endpoints.list()) for (const s of ep.subsets) for (const a of s.addresses) if (a.nodeName) nodes.add(a.nodeName);
      nodes.delete(this.opts.node);
      this.readyNodes = nodes;
    }
    return this.readyNodes;
  }

  /** Whether some Endpoints names `ip` as a ready address (what the rules send traffic to), as last seen. */
  lists(ip: string): boolean {
    // Not listed yet (an agent just restarted): any address may still be named, and traffic sent to it.
    if (!this.endpoints.hasSynced()) return true;
    if (!this.readyIps) {
      const ips = new Set<string>();
      for (const ep of this.endpoints.list()) for (const s of ep.subsets) for (const a of s.addresses) ips.add(a.ip);
      this.readyIps = ips;
    }
    return this.readyIps.has(ip);
  }

  async start(signal: AbortSignal): Promise<void> {
    // A node port on 127.0.0.1 is DNATed to a pod: the kernel must route
    // loopback sources (route_localnet), which only ever comes with the guard
    // dropping what reaches 127.0.0.0/8 from elsewhere (CVE-2020-8558). The
    // guard outlives the proxy (the knob does too): the network's destroy
    // and the clean-up remove it.
    await retrying(() => guardLocalnet(this.opts.chainPrefix));
    const saved = await saveRules();
    // Chains of an earlier agent with this prefix are adopted, then rewritten or deleted.
    const pred = (c: string): boolean => isProxyChain(this.opts.chainPrefix, c);
    this.written = { filter: chainsOf(saved, "filter", pred), nat: chainsOf(saved, "nat", pred) };
    // Only what is missing: the rules a killed agent left keep serving until the caches are listed and the first sync rewrites them.
    const jumps = proxyJumps(this.opts.chainPrefix).filter((j) => !hasRule(saved, j.table, j.rule));
    await retrying(() => restore(renderBootstrap({ chainPrefix: this.opts.chainPrefix, existing: this.written, jumps })));
    const informers = runAll([this.services, this.endpoints], signal);
    const synced = Promise.all([this.services.waitForSync(signal), this.endpoints.waitForSync(signal)]).then(
      () => this.schedule(),
      () => undefined,
    );
    try {
      await informers;
    } finally {
      await synced;
      this.stopped = true;
      clearTimeout(this.timer);
      this.timer = undefined;
      await this.syncing?.catch(() => undefined);
      await retrying(() => this.removeRules());
    }
  }

  /** Whether both caches have listed. */
  hasSynced(): boolean {
    return this.services.hasSynced() && this.endpoints.hasSynced();
  }

  private schedule(): void {
    if (this.stopped || !this.hasSynced() || this.timer) return;
    // After failures, back off (up to 5 s) instead of hammering iptables.
    const delay = this.failures === 0 ? (this.opts.debounceMs ?? 50) : Math.min(5_000, 100 * 2 ** this.failures);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.sync();
    }, delay);
  }

  /** One rewrite at a time; changes arriving meanwhile make one more. */
  private async sync(): Promise<void> {
    if (this.syncing) {
      this.dirty = true;
      return;
    }
    this.syncing = this.apply().then(
      () => {
        this.failures = 0;
      },
      (err: unknown) => {
        this.failures++;
        this.opts.log.error({ err, node: this.opts.node, failures: this.failures }, "service rules not applied; retrying");
        this.dirty = true;
      },
    );
    await this.syncing;
    this.syncing = undefined;
    if (this.dirty) {
      this.dirty = false;
      this.schedule();
    }
  }

  private async apply(): Promise<void> {
    const leaveOut = this.opts.peers?.unreachable();
    const { script, chains, leftOut, leftOutIps } = renderProxyRules(this.services.list(), this.endpoints.list(), {
      chainPrefix: this.opts.chainPrefix,
      clusterCidr: this.opts.clusterCidr ?? "10.244.0.0/16",
      stale: this.written,
      ...(leaveOut ? { leaveOut } : {}),
    });
    await restore(script);
    this.written = chains;
    this.syncs++;
    if (leftOut !== this.leftOut)
      this.opts.log.info({ node: this.opts.node, leftOut, peers: [...(leaveOut ?? [])] }, "endpoints on unreachable peers left out");
    this.leftOut = leftOut;
    this.leftOutGauge?.(leftOut);
    const newlyLeft = leftOutIps.filter((ip) => !this.leftOutIps.has(ip));
    this.leftOutIps = new Set(leftOutIps);
    if (newlyLeft.length > 0) await this.forgetUnanswered(newlyLeft);
    this.opts.log.debug({ node: this.opts.node, natChains: chains.nat.length, syncs: this.syncs, leftOut }, "service rules applied");
  }

  /**
   * Deletes the conntrack entries of connections to `ips` that never got an
   * answer (TCP SYN_SENT; UDP): a SYN sent before the peer was found silent
   * keeps its DNAT to the silent endpoint in its entry, and its retransmits
   * follow it there. Without the entry the next retransmit is a new
   * connection, DNATed by the rules just written to a live endpoint: the
   * client waits a second more instead of failing. Answered TCP
   * connections are left alone; UDP flows to the endpoint all go (as
   * kube-proxy does for stale UDP endpoints: their next datagram is
   * DNATed anew). Needs the `conntrack` tool; without it, nothing.
   */
  private async forgetUnanswered(ips: readonly string[]): Promise<void> {
    if (this.conntrackMissing) return;
    for (const ip of ips) {
      for (const args of [
        ["-D", "-p", "tcp", "--reply-src", ip, "--state", "SYN_SENT"],
        ["-D", "-p", "udp", "--reply-src", ip],
      ]) {
        try {
          await run("conntrack", args);
        } catch (err) {
          // Exit 1 is "0 flow entries have been deleted": nothing to forget.
          if (err instanceof CommandError && err.code !== "ENOENT") continue;
          this.opts.log.warn({ err, node: this.opts.node }, "conntrack unavailable: connections already sent to a silent peer's endpoints stay there");
          this.conntrackMissing = true;
          return;
        }
      }
    }
    this.opts.log.info({ node: this.opts.node, endpoints: ips }, "unanswered connections to left-out endpoints forgotten");
  }

  private async removeRules(): Promise<void> {
    const prefix = this.opts.chainPrefix;
    await restore(removalScript(await saveRules(), (_t, chain) => isProxyChain(prefix, chain)));
    this.opts.log.info({ node: this.opts.node }, "service rules removed");
  }
}

/**
 * Runs an iptables step up to 5 times: agents sharing the host's tables
 * commit concurrently, and a commit that lost a race can be refused.
 */
async function retrying(step: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await step();
      return;
    } catch (err) {
      if (attempt >= 5) throw err;
      await sleep(100 * attempt);
    }
  }
}
