/**
 * SPDY/3.1 framing (draft-mbelshe-httpbis-spdy-00, with 3.1's flow-control
 * frames read and ignored): the frames Kubernetes' clients speak through
 * moby/spdystream for exec, attach and port-forward. Control frames carry
 * header blocks compressed as one zlib stream per direction (dictionary:
 * ./dictionary.ts), so reading and writing them is ordered and async.
 */
import { constants, createDeflate, createInflate, type Deflate, type Inflate } from "node:zlib";
import { SPDY_DICTIONARY } from "./dictionary.js";

export const SPDY_VERSION = 3;

/** Control frame types. */
export const FrameType = {
  SynStream: 1,
  SynReply: 2,
  RstStream: 3,
  Settings: 4,
  Ping: 6,
  GoAway: 7,
  Headers: 8,
  WindowUpdate: 9,
} as const;

/** RST_STREAM status codes. */
export const RstStatus = {
  ProtocolError: 1,
  InvalidStream: 2,
  RefusedStream: 3,
  UnsupportedVersion: 4,
  Cancel: 5,
  InternalError: 6,
  FlowControlError: 7,
  StreamInUse: 8,
  StreamAlreadyClosed: 9,
  FrameTooLarge: 11,
} as const;

const FLAG_FIN = 0x01;
/** The largest control frame payload read (header blocks are small; the 24-bit limit is 16 MiB). */
const MAX_CONTROL_PAYLOAD = 1024 * 1024;
/** The largest decompressed header block (a bomb stops here). */
const MAX_HEADER_BLOCK = 256 * 1024;
/** Data frames written are at most this big (the reader's limit is the protocol's, 16 MiB). */
export const MAX_DATA_FRAME = 64 * 1024;

/** Header names (lower case) and their values (a name may repeat in SPDY as NUL-separated values). */
export type SpdyHeaders = Map<string, string[]>;

export type SpdyFrame =
  | { type: "data"; streamId: number; fin: boolean; data: Buffer }
  | { type: "syn_stream"; streamId: number; associatedTo: number; fin: boolean; headers: SpdyHeaders }
  | { type: "syn_reply" | "headers"; streamId: number; fin: boolean; headers: SpdyHeaders }
  | { type: "rst_stream"; streamId: number; status: number }
  | { type: "settings" }
  | { type: "ping"; id: number }
  | { type: "goaway"; lastGoodStreamId: number; status: number }
  | { type: "window_update"; streamId: number; delta: number }
  | { type: "unknown"; frameType: number };

/** A frame that breaks the protocol (the session answers with GOAWAY and closes). */
export class SpdyProtocolError extends Error {}

/**
 * One direction of zlib over a connection's header blocks: each block is
 * written and sync-flushed, and the output of that flush is the block's.
 */
class HeaderZlib {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private failed: Error | undefined;

  constructor(
    private readonly z: Inflate | Deflate,
    private readonly limit = Infinity,
  ) {
    z.on("data", (c: Buffer) => {
      this.size += c.length;
      if (this.size > this.limit) this.failed ??= new Error(`a header block is larger than ${this.limit} bytes`);
      else this.chunks.push(c);
    });
    z.on("error", (err: Error) => {
      this.failed = err;
    });
  }

  /** The bytes `block` turns into; in order when called in order. */
  run(block: Buffer): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      if (this.failed) return reject(this.failed);
      // A stream that fails (corrupt input) never calls the flush back.
      const onError = (err: Error): void => reject(err);
      this.z.once("error", onError);
      this.z.write(block);
      this.z.flush(constants.Z_SYNC_FLUSH, () => {
        this.z.off("error", onError);
        if (this.failed) return reject(this.failed);
        const out = Buffer.concat(this.chunks, this.size);
        this.chunks.length = 0;
        this.size = 0;
        resolve(out);
      });
    });
  }

  close(): void {
    this.z.close();
  }
}

/** Reads frames from a byte stream (a socket, or a WebSocket's binary messages). */
export class FrameReader {
  private buf: Buffer = Buffer.alloc(0);
  private readonly inflate = new HeaderZlib(createInflate({ dictionary: SPDY_DICTIONARY }), MAX_HEADER_BLOCK);

  constructor(private readonly source: AsyncIterable<Buffer | Uint8Array | string>) {}

  /** Every frame until the source ends (a truncated last frame is a protocol error). */
  async *frames(): AsyncGenerator<SpdyFrame> {
    try {
      for await (const chunk of this.source) {
        const bytes = typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        this.buf = this.buf.length === 0 ? bytes : Buffer.concat([this.buf, bytes]);
        for (;;) {
          const frame = await this.next();
          if (!frame) break;
          yield frame;
        }
      }
      if (this.buf.length > 0) throw new SpdyProtocolError(`the connection ended inside a frame (${this.buf.length} bytes left)`);
    } finally {
      this.inflate.close();
    }
  }

  /** The next whole frame in the buffer, if there is one. */
  private async next(): Promise<SpdyFrame | undefined> {
    if (this.buf.length < 8) return undefined;
    const first = this.buf.readUInt32BE(0);
    const word = this.buf.readUInt32BE(4);
    const flags = word >>> 24;
    const length = word & 0xffffff;
    const control = (first & 0x80000000) !== 0;
    if (control && length > MAX_CONTROL_PAYLOAD) throw new SpdyProtocolError(`a control frame of ${length} bytes is too large`);
    if (this.buf.length < 8 + length) return undefined;
    const payload = this.buf.subarray(8, 8 + length);
    this.buf = this.buf.subarray(8 + length);
    if (!control) {
      const streamId = first & 0x7fffffff;
      if (streamId === 0) throw new SpdyProtocolError("a data frame on stream 0");
      return { type: "data", streamId, fin: (flags & FLAG_FIN) !== 0, data: Buffer.from(payload) };
    }
    const version = (first >>> 16) & 0x7fff;
    const type = first & 0xffff;
    if (version !== SPDY_VERSION) throw new SpdyProtocolError(`SPDY version ${version} is not spoken here (only 3)`);
    const fin = (flags & FLAG_FIN) !== 0;
    const need = (n: number): void => {
      if (payload.length < n) throw new SpdyProtocolError(`control frame type ${type} is ${payload.length} bytes, shorter than ${n}`);
    };
    switch (type) {
      case FrameType.SynStream: {
        need(10);
        const streamId = payload.readUInt32BE(0) & 0x7fffffff;
        if (streamId === 0) throw new SpdyProtocolError("SYN_STREAM for stream 0");
        const associatedTo = payload.readUInt32BE(4) & 0x7fffffff;
        return { type: "syn_stream", streamId, associatedTo, fin, headers: await this.headerBlock(payload.subarray(10)) };
      }
      case FrameType.SynReply:
      case FrameType.Headers: {
        need(4);
        const streamId = payload.readUInt32BE(0) & 0x7fffffff;
        return { type: type === FrameType.SynReply ? "syn_reply" : "headers", streamId, fin, headers: await this.headerBlock(payload.subarray(4)) };
      }
      case FrameType.RstStream:
        need(8);
        return { type: "rst_stream", streamId: payload.readUInt32BE(0) & 0x7fffffff, status: payload.readUInt32BE(4) };
      case FrameType.Settings:
        return { type: "settings" };
      case FrameType.Ping:
        need(4);
        return { type: "ping", id: payload.readUInt32BE(0) };
      case FrameType.GoAway:
        need(4);
        return { type: "goaway", lastGoodStreamId: payload.readUInt32BE(0) & 0x7fffffff, status: payload.length >= 8 ? payload.readUInt32BE(4) : 0 };
      case FrameType.WindowUpdate:
        need(8);
        return { type: "window_update", streamId: payload.readUInt32BE(0) & 0x7fffffff, delta: payload.readUInt32BE(4) & 0x7fffffff };
      default:
        return { type: "unknown", frameType: type };
    }
  }

  private async headerBlock(compressed: Buffer): Promise<SpdyHeaders> {
    let block: Buffer;
    try {
      block = await this.inflate.run(compressed);
    } catch (err) {
      throw new SpdyProtocolError(`a header block did not decompress: ${(err as Error).message}`);
    }
    return decodeHeaderBlock(block);
  }
}

/** A decompressed header block: u32 count, then u32-length-prefixed names and values (values NUL-separated). */
export function decodeHeaderBlock(block: Buffer): SpdyHeaders {
  const headers: SpdyHeaders = new Map();
  let at = 0;
  const u32 = (): number => {
    if (at + 4 > block.length) throw new SpdyProtocolError("a header block ended early");
    const v = block.readUInt32BE(at);
    at += 4;
    return v;
  };
  const str = (): string => {
    const n = u32();
    if (at + n > block.length) throw new SpdyProtocolError("a header block ended early");
    const s = block.toString("latin1", at, at + n);
    at += n;
    return s;
  };
  const count = u32();
  for (let i = 0; i < count; i++) {
    const name = str().toLowerCase();
    const values = str().split("\0");
    headers.set(name, [...(headers.get(name) ?? []), ...values]);
  }
  return headers;
}

/** Header names (any case, sent lower-cased) and their values. */
export function encodeHeaderBlock(headers: Iterable<[string, string | readonly string[]]>): Buffer {
  const parts: Buffer[] = [];
  const u32 = (n: number): void => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    parts.push(b);
  };
  const list = [...headers];
  u32(list.length);
  for (const [name, value] of list) {
    const n = Buffer.from(name.toLowerCase(), "latin1");
    const v = Buffer.from(typeof value === "string" ? value : value.join("\0"), "latin1");
    u32(n.length);
    parts.push(n);
    u32(v.length);
    parts.push(v);
  }
  return Buffer.concat(parts);
}

function controlFrame(type: number, flags: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE((0x80000000 | (SPDY_VERSION << 16) | type) >>> 0, 0);
  head.writeUInt32BE(((flags << 24) | payload.length) >>> 0, 4);
  return Buffer.concat([head, payload]);
}

function u32s(...values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeUInt32BE(v >>> 0, i * 4));
  return b;
}

/** Encodes frames; header blocks go through this direction's zlib stream, so calls that compress must be made in order. */
export class FrameWriter {
  private readonly deflate = new HeaderZlib(createDeflate({ dictionary: SPDY_DICTIONARY }));

  async synReply(streamId: number, headers: Iterable<[string, string | readonly string[]]> = [], fin = false): Promise<Buffer> {
    const block = await this.deflate.run(encodeHeaderBlock(headers));
    return controlFrame(FrameType.SynReply, fin ? FLAG_FIN : 0, Buffer.concat([u32s(streamId), block]));
  }

  /** A SYN_STREAM (what a client sends; the tests' client uses it). */
  async synStream(streamId: number, headers: Iterable<[string, string | readonly string[]]>, fin = false): Promise<Buffer> {
    const block = await this.deflate.run(encodeHeaderBlock(headers));
    return controlFrame(FrameType.SynStream, fin ? FLAG_FIN : 0, Buffer.concat([u32s(streamId, 0), Buffer.from([0, 0]), block]));
  }

  close(): void {
    this.deflate.close();
  }
}

/** A data frame (an empty one with `fin` half-closes the stream). */
export function dataFrame(streamId: number, data: Uint8Array, fin = false): Buffer {
  const head = u32s(streamId & 0x7fffffff, ((fin ? FLAG_FIN : 0) << 24) | data.length);
  return Buffer.concat([head, data]);
}

export function rstStreamFrame(streamId: number, status: number): Buffer {
  return controlFrame(FrameType.RstStream, 0, u32s(streamId, status));
}

export function pingFrame(id: number): Buffer {
  return controlFrame(FrameType.Ping, 0, u32s(id));
}

export function goAwayFrame(lastGoodStreamId: number, status: number): Buffer {
  return controlFrame(FrameType.GoAway, 0, u32s(lastGoodStreamId, status));
}
