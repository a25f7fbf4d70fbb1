import dgram from "node:dgram";
import net from "node:net";

/** A DNS server's address. */
export interface DnsServer {
  address: string;
  port: number;
}

/** Parses `1.2.3.4`, `1.2.3.4:5353`, `::1` or `[::1]:5353` (port 53 unless given). */
export function parseServer(s: string): DnsServer {
  const bracket = /^\[(.+)\](?::(\d+))?$/.exec(s);
  if (bracket) return { address: bracket[1]!, port: Number(bracket[2] ?? 53) };
  const colon = s.lastIndexOf(":");
  if (colon > 0 && net.isIPv4(s.slice(0, colon))) return { address: s.slice(0, colon), port: Number(s.slice(colon + 1)) };
  return { address: s, port: 53 };
}

/** Prefixes a message with its two-byte length (DNS over TCP). */
export function frame(msg: Buffer): Buffer {
  const len = Buffer.alloc(2);
  len.writeUInt16BE(msg.length);
  return Buffer.concat([len, msg]);
}

/** Splits a TCP byte stream into length-prefixed DNS messages. */
export class FrameReader {
  private buf: Buffer = Buffer.alloc(0);

  /** Adds bytes; returns the messages now complete. */
  push(chunk: Buffer): Buffer[] {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const out: Buffer[] = [];
    while (this.buf.length >= 2) {
      const len = this.buf.readUInt16BE(0);
      if (this.buf.length < 2 + len) break;
      out.push(this.buf.subarray(2, 2 + len));
      this.buf = this.buf.subarray(2 + len);
    }
    return out;
  }
}

/**
 * Sends one query over UDP from a fresh socket and resolves with the first
 * reply from that server carrying the query's id; rejects on timeout.
 */
export function queryUdp(server: DnsServer, msg: Buffer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const sock = dgram.createSocket(net.isIPv6(server.address) ? "udp6" : "udp4");
    const id = msg.readUInt16BE(0);
    const done = (err: Error | undefined, reply?: Buffer): void => {
      clearTimeout(timer);
      sock.close();
      if (err) reject(err);
      else resolve(reply!);
    };
    const timer = setTimeout(() => done(new Error(`no reply from ${server.address}:${server.port} over udp`)), timeoutMs);
    sock.on("error", (err) => done(err));
    sock.on("message", (reply, rinfo) => {
      if (reply.length < 12 || reply.readUInt16BE(0) !== id || rinfo.port !== server.port) return;
      done(undefined, reply);
    });
    sock.send(msg, server.port, server.address, (err) => {
      if (err) done(err);
    });
  });
}

/** Sends one query over TCP (length-prefixed) and resolves with the reply; rejects on timeout or close. */
export function queryTcp(server: DnsServer, msg: Buffer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: server.address, port: server.port });
    const reader = new FrameReader();
    let settled = false;
    const done = (err: Error | undefined, reply?: Buffer): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      if (err) reject(err);
      else resolve(reply!);
    };
    const timer = setTimeout(() => done(new Error(`no reply from ${server.address}:${server.port} over tcp`)), timeoutMs);
    sock.on("connect", () => sock.write(frame(msg)));
    sock.on("data", (chunk) => {
      const [reply] = reader.push(chunk);
      if (reply) done(undefined, Buffer.from(reply));
    });
    sock.on("error", (err) => done(err));
    sock.on("close", () => done(new Error(`connection to ${server.address}:${server.port} closed without a reply`)));
  });
}
