import dgram from "node:dgram";
import net from "node:net";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Registry } from "prom-client";
import type { ApiClient } from "@choreo/kit/client";
import type { Endpoints, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { Informer } from "@choreo/kit/informer";
import { sleep, type Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import { getOrCreateCounter } from "@choreo/kit/metrics";
import { CLUSTER_DOMAIN } from "./resolv-conf.js";
import { respond, type Outcome } from "./responder.js";
import { storeSnapshot, storesSynced, type Store } from "./snapshot.js";
import { Forwarder, ForwardLimiter, hostNameservers, type Transport } from "./upstream.js";
import { FrameReader, frame, type DnsServer } from "./wire.js";

/** Options of a node's DNS responder. */
export interface ClusterDnsOptions {
  /** With nc and jsm: the responder runs its own informers (all namespaces) unless `stores` is given. */
  client?: ApiClient;
  nc?: NatsConnection;
  jsm?: JetStreamManager;
  /** Caches to share (e.g. the service proxy's informers); the caller runs them. */
  stores?: { services: Store<Service>; endpoints: Store<Endpoints> };
  log: Logger;
  /** The node bridge's gateway IP; port 53 by default, 0 for any free port. */
  listen: { address: string; port?: number };
  domain?: string;
  /** Where names outside the domain go (default: the host's resolv.conf nameservers, minus `listen.address`). [] → REFUSED. */
  upstream?: string[];
  upstreamTimeoutMs?: number;
  /** Counts queries by outcome in `choreo_dns_queries_total`. */
  metrics?: Registry;
  /**
   * Who may ask, as CIDRs (a node: its pod CIDR and the cluster CIDR). The
   * listen address itself (the host asking its own bridge address) always
   * may; without this option, loopback too. Others are ignored: no UDP
   * reply (nothing to reflect at a spoofed source), TCP connections closed.
   */
  clients?: string[];
  /** Forwards in flight per client address, beyond which queries are REFUSED (default 20). */
  maxForwardsPerClient?: number;
}

/** How long an idle DNS-over-TCP connection stays open. */
const TCP_IDLE_MS = 10_000;

/**
 * A node's DNS responder (Runnable): answers `<svc>.<ns>.svc.<domain>`
 * and friends from the Services and Endpoints caches over UDP and TCP on
 * the node bridge's gateway IP, and forwards everything else upstream.
 * Pods reach it through the resolv.conf `resolvConf()` writes.
 */
export class ClusterDns implements Runnable {
  readonly name = "cluster-dns";
  /** Resolves with the bound address once both sockets listen (port 0 → the chosen port). */
  readonly listening: Promise<DnsServer>;
  private resolveListening!: (s: DnsServer) => void;
  private readonly informers: Runnable[] = [];
  private readonly stores: { services: Store<Service>; endpoints: Store<Endpoints> };
  private readonly forwarder: Forwarder;
  private readonly domain: string;
  private readonly count?: (outcome: Outcome) => void;
  private readonly allowed: net.BlockList;
  private readonly limiter: ForwardLimiter;

  constructor(private readonly opts: ClusterDnsOptions) {
    this.listening = new Promise((r) => (this.resolveListening = r));
    this.domain = opts.domain ?? CLUSTER_DOMAIN;
    if (opts.stores) {
      this.stores = opts.stores;
    } else {
      const { client, nc, jsm, log } = opts;
      if (!client || !nc || !jsm) throw new Error("ClusterDns needs stores or client, nc and jsm");
      const services = new Informer<"service">({ client, nc, jsm, log, kind: "service" });
      const endpoints = new Informer<"endpoints">({ client, nc, jsm, log, kind: "endpoints" });
      this.informers.push(services, endpoints);
      this.stores = { services, endpoints };
    }
    const upstream = opts.upstream ?? hostNameservers([opts.listen.address]);
    this.forwarder = new Forwarder(upstream, opts.upstreamTimeoutMs);
    this.limiter = new ForwardLimiter(opts.maxForwardsPerClient);
    this.allowed = allowList([...(opts.clients ?? ["127.0.0.0/8"]), opts.listen.address]);
    if (opts.metrics) {
      const c = getOrCreateCounter(opts.metrics, "choreo_dns_queries_total", "DNS queries by outcome", ["outcome"]);
      this.count = (outcome) => c.inc({ outcome });
    }
  }

  async start(signal: AbortSignal): Promise<void> {
    const informers = this.informers.map((i) => i.start(signal));
    try {
      const bound = await this.bind(signal);
      if (bound) {
        this.opts.log.info({ address: this.opts.listen.address, port: bound.port, domain: this.domain, upstream: this.forwarder.describe() }, "dns listening");
        await new Promise<void>((r) => (signal.aborted ? r() : signal.addEventListener("abort", () => r(), { once: true })));
        await bound.close();
      }
    } finally {
      await Promise.all(informers);
    }
  }

  /** Whether `address` may ask (counts a denial when not). */
  private admits(address: string | undefined): boolean {
    const ok = address !== undefined && this.allowed.check(address, net.isIPv6(address) ? "ipv6" : "ipv4");
    if (!ok) this.count?.("denied");
    return ok;
  }

  private async handle(msg: Buffer, transport: Transport, client: string): Promise<Buffer | undefined> {
    const { services, endpoints } = this.stores;
    const { reply, outcome } = await respond(msg, transport, {
      snapshot: storeSnapshot(services, endpoints),
      synced: () => storesSynced(services, endpoints),
      domain: this.domain,
      forwarder: this.forwarder,
      client,
      limiter: this.limiter,
    });
    this.count?.(outcome);
    return reply;
  }

  /**
   * Binds UDP then TCP on the same port, retrying while the address is not
   * there yet (the bridge may come up after the agent). Undefined: aborted.
   */
  private async bind(signal: AbortSignal): Promise<{ port: number; close(): Promise<void> } | undefined> {
    const { address } = this.opts.listen;
    for (let attempt = 0; !signal.aborted; attempt++) {
      try {
        const udp = await this.listenUdp(address, this.opts.listen.port ?? 53);
        const port = udp.address().port;
        const tcp = await this.listenTcp(address, port).catch(async (err: unknown) => {
          await new Promise<void>((r) => udp.close(() => r()));
          throw err;
        });
        this.resolveListening({ address, port });
        return {
          port,
          close: async () => {
            await Promise.all([
              new Promise<void>((r) => udp.close(() => r())),
              new Promise<void>((r) => {
                tcp.close(() => r());
                tcp.closeAllConnections?.();
              }),
            ]);
          },
        };
      } catch (err) {
        this.opts.log.warn({ err, address, port: this.opts.listen.port ?? 53, attempt }, "dns bind failed; retrying");
        await sleep(Math.min(5_000, 200 * 2 ** Math.min(attempt, 5)), signal);
      }
    }
    return undefined;
  }

  private listenUdp(address: string, port: number): Promise<dgram.Socket> {
    return new Promise((resolve, reject) => {
      const sock = dgram.createSocket(net.isIPv6(address) ? "udp6" : "udp4");
      sock.once("error", reject);
      sock.bind(port, address, () => {
        sock.off("error", reject);
        sock.on("error", (err) => this.opts.log.warn({ err }, "dns udp socket error"));
        sock.on("message", (msg, rinfo) => {
          if (!this.admits(rinfo.address)) return;
          void this.handle(msg, "udp", rinfo.address)
            .then((reply) => {
              if (reply) sock.send(reply, rinfo.port, rinfo.address);
            })
            .catch((err: unknown) => this.opts.log.warn({ err }, "dns query failed"));
        });
        resolve(sock);
      });
    });
  }

  private listenTcp(address: string, port: number): Promise<net.Server & { closeAllConnections?(): void }> {
    const conns = new Set<net.Socket>();
    const server = net.createServer((conn) => {
      const client = conn.remoteAddress;
      if (!this.admits(client)) {
        conn.destroy();
        return;
      }
      conns.add(conn);
      conn.setTimeout(TCP_IDLE_MS, () => conn.destroy());
      conn.on("close", () => conns.delete(conn));
      conn.on("error", () => conn.destroy());
      const reader = new FrameReader();
      conn.on("data", (chunk) => {
        for (const msg of reader.push(chunk)) {
          void this.handle(Buffer.from(msg), "tcp", client ?? "")
            .then((reply) => {
              if (reply && !conn.destroyed) conn.write(frame(reply));
            })
            .catch((err: unknown) => this.opts.log.warn({ err }, "dns query failed"));
        }
      });
    });
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host: address, port }, () => {
        server.off("error", reject);
        resolve(
          Object.assign(server, {
            closeAllConnections: () => {
              for (const c of conns) c.destroy();
            },
          }),
        );
      });
    });
  }
}

/** A BlockList (used as an allow list) of CIDRs and plain addresses, IPv4 or IPv6. */
export function allowList(cidrs: readonly string[]): net.BlockList {
  const list = new net.BlockList();
  for (const c of cidrs) {
    const [address = "", bits] = c.split("/");
    const type = net.isIPv6(address) ? "ipv6" : "ipv4";
    if (bits === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(bits), type);
  }
  return list;
}
