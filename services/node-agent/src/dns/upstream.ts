import { readFileSync } from "node:fs";
import { parseServer, queryTcp, queryUdp, type DnsServer } from "./wire.js";

/**
 * The nameservers of a resolv.conf (the host's by default), leaving out
 * the addresses in `skip` — the responder's own, so that a host whose
 * resolv.conf points at the node's responder does not forward to itself.
 */
export function hostNameservers(skip: string[] = [], path = "/etc/resolv.conf"): string[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const line of text.split("\n")) {
    const m = /^\s*nameserver\s+(\S+)/.exec(line);
    if (m && !skip.includes(m[1]!)) out.push(m[1]!);
  }
  return out;
}

/** How a query reached the responder; it is forwarded the same way. */
export type Transport = "udp" | "tcp";

/**
 * Forwards queries for names outside the cluster to upstream servers, in
 * order, each with a timeout. A UDP reply is passed on as it is, truncated
 * or not: a client seeing TC retries over TCP and is forwarded over TCP.
 */
export class Forwarder {
  private readonly servers: DnsServer[];

  constructor(
    upstream: string[],
    private readonly timeoutMs = 2_000,
  ) {
    this.servers = upstream.map(parseServer);
  }

  /** Whether there is anywhere to forward to (none: the responder answers REFUSED). */
  get enabled(): boolean {
    return this.servers.length > 0;
  }

  /** The upstream servers as `address:port`. */
  describe(): string[] {
    return this.servers.map((s) => `${s.address}:${s.port}`);
  }

  /** The first upstream reply, or undefined when none answered in time. */
  async forward(msg: Buffer, transport: Transport): Promise<Buffer | undefined> {
    for (const server of this.servers) {
      try {
        return transport === "udp" ? await queryUdp(server, msg, this.timeoutMs) : await queryTcp(server, msg, this.timeoutMs);
      } catch {
        // Try the next one; SERVFAIL when none answers.
      }
    }
    return undefined;
  }
}

/**
 * Caps the forwards in flight per client address: a pod flooding the
 * responder with names that time out upstream holds at most `max` of them
 * (CoreDNS' forward `max_concurrent`, per client); the rest are REFUSED.
 */
export class ForwardLimiter {
  private readonly inFlight = new Map<string, number>();

  constructor(readonly max = 20) {}

  /** Takes a slot for `client`; false when it has `max` already. */
  acquire(client: string): boolean {
    const n = this.inFlight.get(client) ?? 0;
    if (n >= this.max) return false;
    this.inFlight.set(client, n + 1);
    return true;
  }

  release(client: string): void {
    const n = (this.inFlight.get(client) ?? 1) - 1;
    if (n <= 0) this.inFlight.delete(client);
    else this.inFlight.set(client, n);
  }

  /** Forwards in flight for `client`. */
  count(client: string): number {
    return this.inFlight.get(client) ?? 0;
  }
}
