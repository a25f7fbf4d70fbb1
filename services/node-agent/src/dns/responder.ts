import dnsPacket, { type Packet } from "dns-packet";
import { answer, emptyResponse, inDomain, Rcode } from "./answer.js";
import type { DnsSnapshot } from "./snapshot.js";
import type { Forwarder, Transport } from "./upstream.js";

/** What became of a query (a metric label). */
export type Outcome = "answered" | "nxdomain" | "forwarded" | "servfail" | "refused" | "formerr" | "dropped";

/** The wire-level responder: bytes in, bytes out. */
export interface ResponderOptions {
  snapshot: DnsSnapshot;
  /** False while the caches are not synced: cluster names answer SERVFAIL rather than a wrong NXDOMAIN. */
  synced: () => boolean;
  domain: string;
  forwarder: Forwarder;
}

/** The largest UDP reply without EDNS (RFC 1035) and the largest we send with it (DNS flag day 2020). */
const UDP_PLAIN = 512;
const UDP_EDNS_MAX = 1232;

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
    const reply = await o.forwarder.forward(msg, transport);
    if (reply) return { reply, outcome: "forwarded" };
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
  if (transport === "tcp" || reply.length <= udpLimit(query)) return { reply, outcome };
  const truncated: Packet = {
    ...res,
    flags: (res.flags ?? 0) | dnsPacket.TRUNCATED_RESPONSE,
    answers: [],
    authorities: [],
    additionals: (res.additionals ?? []).filter((r) => r.type === "OPT"),
  };
  return { reply: dnsPacket.encode(truncated), outcome };
}

/** The reply size the client accepts over UDP: 512, or its EDNS payload size up to 1232. */
function udpLimit(query: Packet): number {
  const opt = (query.additionals ?? []).find((r) => r.type === "OPT");
  if (!opt || opt.type !== "OPT") return UDP_PLAIN;
  return Math.max(UDP_PLAIN, Math.min(opt.udpPayloadSize, UDP_EDNS_MAX));
}
