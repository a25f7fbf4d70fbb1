import dnsPacket, { type Packet } from "dns-packet";
import { answer, emptyResponse, inDomain, Rcode } from "./answer.js";
import type { DnsSnapshot } from "./snapshot.js";
import type { ForwardLimiter, Forwarder, Transport } from "./upstream.js";

/** What became of a query (a metric label). */
export type Outcome = "answered" | "nxdomain" | "forwarded" | "servfail" | "refused" | "formerr" | "dropped" | "denied" | "limited";

/** The wire-level responder: bytes in, bytes out. */
export interface ResponderOptions {
  snapshot: DnsSnapshot;
  /** False while the caches are not synced: cluster names answer SERVFAIL rather than a wrong NXDOMAIN. */
  synced: () => boolean;
  domain: string;
  forwarder: Pick<Forwarder, "enabled" | "forward">;
  /** The client's address and the per-client cap on forwards in flight (none: uncapped). */
  client?: string;
  limiter?: ForwardLimiter;
}

/** The largest UDP reply without EDNS (RFC 1035) and the largest we send with it (DNS flag day 2020). */
const UDP_PLAIN = 512;
const UDP_EDNS_MAX = 1232;
/** What a DNS-over-TCP frame's two-byte length allows. */
const TCP_MAX = 65_535;

/**
 * Handles one DNS message: cluster names answered from the snapshot,
 * others forwarded (REFUSED without upstreams, SERVFAIL when none answers).
 * A UDP reply larger than the client accepts is truncated (TC) so the
 * client retries over TCP. Undefined: no reply (not a query, or garbage).
 */
export async function respond(msg: Buffer, transport: Transport, o: ResponderOptions): Promise<{ reply?: Buffer; outcome: Outcome }> {
  let query: Packet;
  try {
    query = dnsPacket.decode(msg);
  } catch {
    if (msg.length < 12 || msg.readUInt16BE(2) & 0x8000) return { outcome: "dropped" };
    // A header we can read: say FORMERR rather than leave the client waiting.
    const reply = Buffer.from(msg.subarray(0, 12));
    reply.writeUInt16BE(0x8000 | (msg.readUInt16BE(2) & 0x0100) | Rcode.FORMERR, 2);
    reply.fill(0, 4);
    return { reply, outcome: "formerr" };
  }
  if (query.type === "response") return { outcome: "dropped" };
  const name = query.questions?.[0]?.name;
  if (name !== undefined && !inDomain(name, o.domain)) {
    if (!o.forwarder.enabled) return encode(emptyResponse(query, Rcode.REFUSED), query, transport, "refused");
    const client = o.client ?? "";
    if (o.limiter && !o.limiter.acquire(client)) return encode(emptyResponse(query, Rcode.REFUSED), query, transport, "limited");
    let reply: Buffer | undefined;
    try {
      reply = await o.forwarder.forward(msg, transport);
    } finally {
      o.limiter?.release(client);
    }
    if (reply) return { reply: capForwarded(reply, query, transport), outcome: "forwarded" };
    return encode(emptyResponse(query, Rcode.SERVFAIL), query, transport, "servfail");
  }
  if (name !== undefined && !o.synced()) return encode(emptyResponse(query, Rcode.SERVFAIL), query, transport, "servfail");
  const res = answer(query, o.snapshot, o.domain) ?? emptyResponse(query, Rcode.REFUSED);
  const rcode = (res.flags ?? 0) & 0xf;
  const outcome: Outcome = rcode === Rcode.NOERROR ? "answered" : rcode === Rcode.NXDOMAIN ? "nxdomain" : rcode === Rcode.FORMERR ? "formerr" : "refused";
  return encode(res, query, transport, outcome);
}

function encode(res: Packet, query: Packet, transport: Transport, outcome: Outcome): { reply: Buffer; outcome: Outcome } {
  const reply = dnsPacket.encode(res);
  if (reply.length <= replyLimit(query, transport)) return { reply, outcome };
  return { reply: dnsPacket.encode(truncate(res)), outcome };
}

/** A response cut to its header, question and OPT, with TC set: the client retries over TCP (or gives up). */
function truncate(res: Packet): Packet {
  return {
    ...res,
    flags: (res.flags ?? 0) | dnsPacket.TRUNCATED_RESPONSE,
    answers: [],
    authorities: [],
    additionals: (res.additionals ?? []).filter((r) => r.type === "OPT"),
  };
}

/**
 * An upstream's reply held to what the client may receive: over UDP its
 * limit (512 without EDNS — an upstream may answer bigger than asked, or the
 * query's EDNS size may exceed ours), over TCP the 65,535 a frame holds.
 * Larger, it goes back as a truncated response to the client's own question
 * and id (upstream rcode kept); unreadable and over the limit, as SERVFAIL.
 */
export function capForwarded(reply: Buffer, query: Packet, transport: Transport): Buffer {
  if (reply.length <= replyLimit(query, transport)) return reply;
  let upstream: Packet | undefined;
  try {
    upstream = dnsPacket.decode(reply);
  } catch {
    upstream = undefined;
  }
  const base = upstream?.type === "response" ? { ...upstream, id: query.id, questions: query.questions } : emptyResponse(query, Rcode.SERVFAIL);
  return dnsPacket.encode(truncate(base));
}

/** The largest reply the client takes: its UDP limit, or a TCP frame's. */
function replyLimit(query: Packet, transport: Transport): number {
  return transport === "tcp" ? TCP_MAX : udpLimit(query);
}

/** The reply size the client accepts over UDP: 512, or its EDNS payload size up to 1232. */
function udpLimit(query: Packet): number {
  const opt = (query.additionals ?? []).find((r) => r.type === "OPT");
  if (!opt || opt.type !== "OPT") return UDP_PLAIN;
  return Math.max(UDP_PLAIN, Math.min(opt.udpPayloadSize, UDP_EDNS_MAX));
}
