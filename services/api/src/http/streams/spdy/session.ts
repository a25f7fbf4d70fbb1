/**
 * The server side of a SPDY/3.1 connection as Kubernetes' clients use it:
 * the client opens every stream (SYN_STREAM with its headers: streamtype,
 * port, requestid); the server replies to each, reads and writes data, and
 * half-closes with FIN. Pings are echoed. Flow-control frames are read and
 * ignored, as moby/spdystream (both ends of kubectl's SPDY) does: back-pressure
 * is the transport's (TCP, or the WebSocket carrying the frames).
 */
import { setMaxListeners } from "node:events";
import type { Duplex } from "node:stream";
import {
  dataFrame,
  FrameReader,
  FrameWriter,
  goAwayFrame,
  MAX_DATA_FRAME,
  pingFrame,
  RstStatus,
  rstStreamFrame,
  SpdyProtocolError,
  type SpdyHeaders,
} from "./framer.js";

/** Bytes a stream may hold unread before the connection stops reading (spdystream itself holds none). */
const STREAM_HIGH_WATER = 1024 * 1024;
/** How long a closed connection waits for the client to close its side before it is destroyed. */
const CLOSE_LINGER_MS = 1_000;

/** One client-opened stream. */
export class SpdyStream {
  /** Aborted when the stream is reset (either side) or the connection closes. */
  readonly signal: AbortSignal;
  private readonly ac = new AbortController();
  private readonly queue: Buffer[] = [];
  private queued = 0;
  private remoteFin = false;
  private localFin = false;
  private wake: (() => void) | undefined;
  private drained: (() => void) | undefined;

  constructor(
    readonly id: number,
    readonly headers: SpdyHeaders,
    private readonly session: SpdySession,
  ) {
    this.signal = this.ac.signal;
    setMaxListeners(0, this.signal);
  }

  /** The first value of a header (names are lower case), or "". */
  header(name: string): string {
    return this.headers.get(name)?.[0] ?? "";
  }

  /** Sends the SYN_REPLY the client waits for before using the stream. */
  reply(): Promise<void> {
    return this.session.send(async (w) => [await w.synReply(this.id)]);
  }

  /** Writes bytes (in frames of at most 64 KiB), resolved once the transport took them. */
  async write(data: Uint8Array): Promise<void> {
    if (this.localFin || this.signal.aborted) return;
    for (let at = 0; at < data.length; at += MAX_DATA_FRAME) {
      await this.session.send(() => [dataFrame(this.id, data.subarray(at, at + MAX_DATA_FRAME))]);
    }
  }

  /** Half-closes this side (an empty data frame with FIN). */
  async end(): Promise<void> {
    if (this.localFin || this.signal.aborted) return;
    this.localFin = true;
    await this.session.send(() => [dataFrame(this.id, new Uint8Array(), true)]);
    this.settle();
  }

  /** Resets the stream (RST_STREAM to the client). */
  reset(status: number = RstStatus.Cancel): void {
    if (this.signal.aborted) return;
    void this.session.send(() => [rstStreamFrame(this.id, status)]);
    this.abort();
  }

  /** The client's bytes until its FIN (or the stream's reset: then the iteration just stops). */
  async *data(): AsyncGenerator<Buffer> {
    for (;;) {
      const chunk = this.queue.shift();
      if (chunk) {
        this.queued -= chunk.length;
        if (this.queued < STREAM_HIGH_WATER / 2) this.release();
        yield chunk;
        continue;
      }
      if (this.remoteFin || this.signal.aborted) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }

  /** The client half-closed the stream (its FIN). */
  get remoteEnded(): boolean {
    return this.remoteFin;
  }

  /** @internal The connection's reader hands over a data frame; resolves when the stream can take more. */
  async push(data: Buffer, fin: boolean): Promise<void> {
    if (this.signal.aborted) return;
    if (data.length > 0) {
      this.queue.push(data);
      this.queued += data.length;
    }
    if (fin) this.remoteFin = true;
    this.wake?.();
    if (fin) this.settle();
    if (this.queued >= STREAM_HIGH_WATER && !this.signal.aborted) await new Promise<void>((resolve) => (this.drained = resolve));
  }

  /** @internal Reset by the client or the connection gone. */
  abort(): void {
    if (this.signal.aborted) return;
    this.ac.abort();
    this.wake?.();
    this.release();
    this.session.forget(this.id);
  }

  private release(): void {
    const d = this.drained;
    this.drained = undefined;
    d?.();
  }

  /** Both sides closed: the stream is done. */
  private settle(): void {
    if (this.localFin && this.remoteFin) this.session.forget(this.id);
  }
}

/** Options of {@link SpdySession}. */
export interface SpdySessionOptions {
  /** A new stream (replied or reset by the handler); must not block. */
  onStream(stream: SpdyStream): void;
}

/**
 * A server connection over `transport`: `run()` reads frames until the
 * client goes away (or breaks the protocol: GOAWAY, then close), then
 * aborts every stream still open. Writes are ordered (header compression
 * is one zlib stream) and wait for the transport's drain.
 */
export class SpdySession {
  /** Aborted when the connection ends. */
  readonly signal: AbortSignal;
  private readonly ac = new AbortController();
  private readonly streams = new Map<number, SpdyStream>();
  private readonly writer = new FrameWriter();
  private tail: Promise<void> = Promise.resolve();
  private lastStreamId = 0;
  private closing = false;

  constructor(
    private readonly transport: Duplex,
    private readonly opts: SpdySessionOptions,
  ) {
    this.signal = this.ac.signal;
    setMaxListeners(0, this.signal);
    transport.on("error", () => this.ac.abort());
    transport.on("close", () => this.ac.abort());
  }

  /** Streams open now. */
  get openStreams(): number {
    return this.streams.size;
  }

  /** Reads the connection until it ends; resolves (never rejects) once every stream was aborted. */
  async run(): Promise<void> {
    // A protocol error stops the reading but not the connection: the GOAWAY saying so is still written.
    const reader = new FrameReader(this.transport.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>);
    try {
      for await (const f of reader.frames()) {
        if (this.signal.aborted) break;
        switch (f.type) {
          case "syn_stream": {
            if (f.streamId <= this.lastStreamId || f.streamId % 2 === 0) {
              void this.send(() => [rstStreamFrame(f.streamId, RstStatus.ProtocolError)]);
              break;
            }
            this.lastStreamId = f.streamId;
            const stream = new SpdyStream(f.streamId, f.headers, this);
            this.streams.set(f.streamId, stream);
            if (f.fin) void stream.push(Buffer.alloc(0), true);
            this.opts.onStream(stream);
            break;
          }
          case "data": {
            const stream = this.streams.get(f.streamId);
            if (stream) await stream.push(f.data, f.fin);
            else if (f.streamId > this.lastStreamId) void this.send(() => [rstStreamFrame(f.streamId, RstStatus.InvalidStream)]);
            break;
          }
          case "rst_stream":
            this.streams.get(f.streamId)?.abort();
            break;
          case "ping":
            // The client's pings are odd; echo them (spdystream's keep-alive).
            if (f.id % 2 === 1) void this.send(() => [pingFrame(f.id)]);
            break;
          case "goaway":
            this.close();
            break;
          case "headers":
            if (f.fin) await this.streams.get(f.streamId)?.push(Buffer.alloc(0), true);
            break;
          default:
            // SETTINGS, WINDOW_UPDATE, SYN_REPLY (the client replies to nothing we open), unknown types: ignored.
            break;
        }
      }
    } catch (err) {
      if (err instanceof SpdyProtocolError) {
        void this.send(() => [goAwayFrame(this.lastStreamId, 1)]);
      }
    } finally {
      await this.closeAfterWrites();
    }
  }

  /** Queues frames (built in order, so header compression stays in step); resolves once written. */
  send(build: (w: FrameWriter) => Promise<Buffer[]> | Buffer[]): Promise<void> {
    const next = this.tail.then(async () => {
      if (this.signal.aborted || this.transport.destroyed || this.transport.writableEnded) return;
      const frames = await build(this.writer);
      for (const frame of frames) {
        if (!this.transport.write(frame)) await this.drain();
      }
    });
    this.tail = next.catch(() => undefined);
    return this.tail;
  }

  /** Closes the connection once queued frames are written (GOAWAY first, as kubelet's server does not wait for one). */
  close(): void {
    void this.closeAfterWrites();
  }

  /** @internal A stream is done. */
  forget(id: number): void {
    this.streams.delete(id);
  }

  private async closeAfterWrites(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    await this.send(() => [goAwayFrame(this.lastStreamId, 0)]);
    if (!this.transport.destroyed) {
      this.transport.end();
      // The client has a moment to read what was written and close; then the connection goes (and run()'s read ends).
      const linger = setTimeout(() => this.transport.destroy(), CLOSE_LINGER_MS);
      this.transport.once("close", () => clearTimeout(linger));
    }
    this.ac.abort();
    for (const s of [...this.streams.values()]) s.abort();
    this.writer.close();
  }

  private drain(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.transport.off("drain", done);
        this.transport.off("close", done);
        resolve();
      };
      this.transport.on("drain", done);
      this.transport.on("close", done);
    });
  }
}
