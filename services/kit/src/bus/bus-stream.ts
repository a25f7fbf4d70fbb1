/**
 * A two-way stream of numbered channels between two NATS inboxes, with
 * credit-based flow control in both directions: the vocabulary of pods/exec
 * and pods/attach between the api and a node agent (and of port-forward
 * later). Each side owns one inbox and sends to its peer's:
 *
 *   <inbox>       frames "data" (channel header) | "close" (channel) | "end" (optional Status)
 *   <inbox>.ctl   frames "credit" (data frames consumed, decimal; also the heartbeat) | "abort" (optional Status)
 *
 * Data and its end travel on one subject (in order); control on another, so
 * that a side slow to consume data still hears credit and heartbeats.
 * A side sends at most `window` data frames beyond what its peer last said
 * it consumed, so a slow reader holds memory at `window` × 32 KiB.
 * Either side stops when it heard nothing from the other for `idleTimeoutMs`.
 * Core NATS does not keep what it could not deliver: a stream whose
 * connection to the bus drops stops ("lost", with a 503 saying so) instead of
 * going on with a hole in its bytes, and frames on the data subject are
 * numbered (`Choreo-Seq`) so that a hole found otherwise stops it too.
 *
 * The opening (who learns the other's inbox how) is the user's: exec sends
 * its inbox in the request and the agent answers with its own in the reply's
 * `Choreo-Stream-Inbox` header (see services/node-agent/src/streams/README.md).
 */
import { createInbox, headers, type MsgHdrs, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { ApiError, failure } from "../api/errors.js";
import { Status } from "../gen/choreo/meta/v1/meta.js";

/** The header naming a frame's kind. */
export const STREAM_FRAME_HEADER = "Choreo-Stream";
/** The header carrying a data or close frame's channel (decimal). */
export const STREAM_CHANNEL_HEADER = "Choreo-Channel";
/** The header numbering the frames of a stream's data subject (1, 2, …): a gap is a frame the bus lost. */
export const STREAM_SEQ_HEADER = "Choreo-Seq";
/** The header of a stream's opening reply naming the answering side's inbox. */
export const STREAM_INBOX_HEADER = "Choreo-Stream-Inbox";

/**
 * A new inbox of `nc`, under its user's prefix (`inboxPrefix`, set by kit's
 * connect options: a restricted user may subscribe under its own prefix only).
 */
export function newInbox(nc: NatsConnection): string {
  // The connection's options are on nats.js's implementation, not on its NatsConnection interface.
  const prefix = (nc as unknown as { options?: { inboxPrefix?: string } }).options?.inboxPrefix;
  return createInbox(prefix);
}

/** Kinds of frames. */
export const StreamFrame = {
  /** The opening reply: the stream runs (its inbox in {@link STREAM_INBOX_HEADER}). */
  Ack: "ack",
  /** Bytes on a channel (at most {@link STREAM_CHUNK_BYTES}). */
  Data: "data",
  /** The sender will send nothing more on a channel (stdin EOF). */
  Close: "close",
  /** The sender is done; the payload, if any, is its final Status. */
  End: "end",
  /** Data frames consumed so far, decimal; sent at least every heartbeat. */
  Credit: "credit",
  /** The sender gave the stream up (the payload, if any, is a Status saying why). */
  Abort: "abort",
  /** The opening failed: the payload is a Status. */
  Error: "error",
} as const;
export type StreamFrame = (typeof StreamFrame)[keyof typeof StreamFrame];

/** Each side reports credit (its heartbeat) at least this often. */
export const STREAM_HEARTBEAT_MS = 5_000;
/** Either side gives the stream up after this long without hearing from the other. */
export const STREAM_IDLE_TIMEOUT_MS = 15_000;
/** Data frames a side may send beyond what its peer reported consumed. */
export const STREAM_WINDOW = 64;
/** The largest data frame (well under NATS' default 1 MiB payload). */
export const STREAM_CHUNK_BYTES = 32 * 1024;

/** Headers of a frame of `kind` (and `channel` for data and close). */
export function streamFrameHeaders(kind: StreamFrame, channel?: number): MsgHdrs {
  const h = headers();
  h.set(STREAM_FRAME_HEADER, kind);
  if (channel !== undefined) h.set(STREAM_CHANNEL_HEADER, String(channel));
  return h;
}

/** The kind of a received frame (`undefined` when the message is not one). */
export function streamFrameOf(msg: { headers?: MsgHdrs | undefined }): StreamFrame | undefined {
  const kind = msg.headers?.get(STREAM_FRAME_HEADER);
  return Object.values(StreamFrame).find((k) => k === kind);
}

/** The payload of a Status frame. */
export function encodeStreamStatus(status: Status): Uint8Array {
  return Status.encode(status).finish();
}

/** The ApiError a Status frame carries (a 500 when the payload does not decode). */
export function decodeStreamError(data: Uint8Array): ApiError {
  try {
    return new ApiError(Status.decode(data));
  } catch (err) {
    return new ApiError(failure(500, "InternalError", "Internal error occurred: undecodable stream error"), { cause: err });
  }
}

/** What a side receives. */
export type StreamEvent =
  { kind: "data"; channel: number; data: Uint8Array } | { kind: "close"; channel: number } | { kind: "end"; status: Status | undefined };

/** Why a stream stopped. */
export type StreamStop = "ended" | "aborted" | "idle" | "closed" | "shutdown" | "lost";

/** Options of {@link BusStream}. */
export interface BusStreamOptions {
  nc: NatsConnection;
  /** This side's inbox (subscribed by the constructor, with `<local>.ctl`). */
  local: string;
  /** The peer's inbox; may be set later with {@link BusStream.connect} (the opener learns it from the reply). */
  remote?: string;
  /** This side's own shutdown: aborts the stream (the peer is told). */
  signal?: AbortSignal;
  heartbeatMs?: number;
  idleTimeoutMs?: number;
  window?: number;
}

const text = new TextDecoder();

/**
 * One side of a two-way channel stream (module comment). `events()` yields
 * what the peer sends, in order; a data event counts as consumed when the
 * consumer asks for the next event, which is when credit flows back.
 * `signal` aborts when the stream is over for this side: peer's abort, idle,
 * own shutdown, or `close()`.
 */
export class BusStream {
  readonly signal: AbortSignal;
  /** Why the stream stopped, once it did. */
  why: StreamStop | undefined;
  /** The Status the peer aborted with, if any. */
  abortStatus: Status | undefined;
  private readonly ac = new AbortController();
  private readonly data: Subscription;
  private readonly ctl: Subscription;
  private readonly timer: NodeJS.Timeout;
  private readonly heartbeatMs: number;
  private readonly idleTimeoutMs: number;
  private readonly window: number;
  private remote: string | undefined;
  private readonly onOuterAbort = (): void => this.abort(undefined, "shutdown");
  private sent = 0;
  private peerConsumed = 0;
  private consumed = 0;
  private reported = 0;
  private lastHeard = Date.now();
  private lastReport = 0;
  private wake: (() => void) | undefined;
  private ended = false;
  /** Frames published on the peer's data subject, and the next one expected on ours. */
  private seq = 0;
  private expected = 1;

  constructor(private readonly o: BusStreamOptions) {
    this.signal = this.ac.signal;
    watchConnection(o.nc, this);
    this.remote = o.remote;
    this.heartbeatMs = o.heartbeatMs ?? STREAM_HEARTBEAT_MS;
    this.idleTimeoutMs = o.idleTimeoutMs ?? STREAM_IDLE_TIMEOUT_MS;
    this.window = o.window ?? STREAM_WINDOW;
    this.data = o.nc.subscribe(o.local);
    this.ctl = o.nc.subscribe(`${o.local}.ctl`, {
      callback: (err, m) => {
        if (err) return;
        this.lastHeard = Date.now();
        const kind = streamFrameOf(m);
        if (kind === StreamFrame.Credit) {
          const n = Number(text.decode(m.data));
          if (Number.isSafeInteger(n) && n > this.peerConsumed) this.peerConsumed = n;
          this.wakeUp();
        } else if (kind === StreamFrame.Abort) {
          if (m.data.length > 0) this.abortStatus = decodeStatus(m.data);
          this.stop("aborted");
        }
      },
    });
    this.timer = setInterval(() => this.tick(), Math.max(10, Math.min(1_000, this.heartbeatMs / 2)));
    this.timer.unref();
    if (o.signal?.aborted) this.stop("shutdown");
    else o.signal?.addEventListener("abort", this.onOuterAbort, { once: true });
  }

  /** This side's inbox (the opener sends it in its request; the answerer in its ack). */
  get localInbox(): string {
    return this.o.local;
  }

  /** Names the peer's inbox (the opener learns it from the reply); starts heartbeats. */
  connect(remote: string): void {
    this.remote = remote;
    this.lastHeard = Date.now();
    this.report();
  }

  /** Sends bytes on a channel as data frames, waiting for credit; false once the stream stopped. */
  async send(channel: number, chunk: Uint8Array): Promise<boolean> {
    for (let off = 0; off < chunk.length; off += STREAM_CHUNK_BYTES) {
      while (!this.signal.aborted && this.sent - this.peerConsumed >= this.window) {
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
      if (this.signal.aborted) return false;
      this.publishData(chunk.subarray(off, off + STREAM_CHUNK_BYTES), streamFrameHeaders(StreamFrame.Data, channel));
      this.sent++;
    }
    return !this.signal.aborted;
  }

  /** Tells the peer nothing more comes on `channel`. */
  closeChannel(channel: number): void {
    if (!this.signal.aborted) this.publishData(new Uint8Array(), streamFrameHeaders(StreamFrame.Close, channel));
  }

  /** This side is done (after all its data); `status` is its final word (exec: the exit). */
  end(status?: Status): void {
    if (this.signal.aborted || this.ended) return;
    this.ended = true;
    this.publishData(status ? encodeStreamStatus(status) : new Uint8Array(), streamFrameHeaders(StreamFrame.End));
  }

  /** Gives the stream up and tells the peer (with why, if given). */
  abort(status?: Status, why: StreamStop = "aborted"): void {
    if (this.signal.aborted) return;
    if (!this.ended) this.publish(this.ctlOf(this.remote), status ? encodeStreamStatus(status) : new Uint8Array(), streamFrameHeaders(StreamFrame.Abort));
    this.stop(why);
  }

  /** What the peer sends, until its end, an abort, idleness or close. */
  async *events(): AsyncGenerator<StreamEvent> {
    const onAbort = (): void => this.data.unsubscribe();
    if (this.signal.aborted) onAbort();
    else this.signal.addEventListener("abort", onAbort, { once: true });
    try {
      for await (const m of this.data) {
        this.lastHeard = Date.now();
        const seq = m.headers?.get(STREAM_SEQ_HEADER);
        if (seq) {
          if (Number(seq) !== this.expected) {
            // The bus dropped frames (e.g. across a nats-server restart): the bytes have a hole, so the stream cannot go on.
            const lost = failure(500, "InternalError", `the bus lost frames of this stream (frame ${seq} came when ${this.expected} was due)`);
            this.abortStatus = lost;
            this.abort(lost, "lost");
            return;
          }
          this.expected++;
        }
        const kind = streamFrameOf(m);
        const channel = Number(m.headers?.get(STREAM_CHANNEL_HEADER) ?? "-1");
        if (kind === StreamFrame.Data) {
          yield { kind: "data", channel, data: m.data };
          this.consumed++;
          if (this.consumed - this.reported >= this.window / 2) this.report();
        } else if (kind === StreamFrame.Close) {
          yield { kind: "close", channel };
        } else if (kind === StreamFrame.End) {
          yield { kind: "end", status: m.data.length > 0 ? decodeStatus(m.data) : undefined };
          return;
        }
      }
    } finally {
      this.signal.removeEventListener("abort", onAbort);
    }
  }

  /** Releases subscriptions and the timer; aborts `signal` (the peer is not told: see `abort`). */
  close(): void {
    this.stop("closed");
    clearInterval(this.timer);
    this.o.signal?.removeEventListener("abort", this.onOuterAbort);
    this.data.unsubscribe();
    this.ctl.unsubscribe();
  }

  private report(): void {
    this.reported = this.consumed;
    this.lastReport = Date.now();
    this.publish(this.ctlOf(this.remote), new TextEncoder().encode(String(this.consumed)), streamFrameHeaders(StreamFrame.Credit));
  }

  private tick(): void {
    if (this.remote === undefined || this.signal.aborted) return;
    const now = Date.now();
    if (now - this.lastHeard > this.idleTimeoutMs) this.stop("idle");
    else if (now - this.lastReport >= this.heartbeatMs) this.report();
  }

  /** @internal The connection to the bus dropped: what was in flight may be gone. */
  lose(): void {
    if (this.signal.aborted) return;
    const lost = failure(503, "ServiceUnavailable", "the connection to the bus dropped (nats-server restarted or unreachable): the stream cannot go on");
    this.abortStatus = lost;
    this.abort(lost, "lost");
  }

  private stop(why: StreamStop): void {
    if (this.signal.aborted) return;
    streamsOf.get(this.o.nc)?.delete(this);
    this.why = why;
    this.ac.abort();
    this.wakeUp();
  }

  private wakeUp(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private ctlOf(inbox: string | undefined): string | undefined {
    return inbox === undefined ? undefined : `${inbox}.ctl`;
  }

  /** A frame on the peer's data subject, numbered. */
  private publishData(data: Uint8Array, h: MsgHdrs): void {
    if (this.remote === undefined) return;
    h.set(STREAM_SEQ_HEADER, String(++this.seq));
    this.publish(this.remote, data, h);
  }

  private publish(subject: string | undefined, data: Uint8Array, h: MsgHdrs): void {
    if (subject === undefined) return;
    try {
      if (!this.o.nc.isClosed()) this.o.nc.publish(subject, data, { headers: h });
    } catch {
      // The connection is closing: the peer notices the silence.
    }
  }
}

/** The open streams of each connection, and one watcher of its status each. */
const streamsOf = new WeakMap<NatsConnection, Set<BusStream>>();

function watchConnection(nc: NatsConnection, stream: BusStream): void {
  let open = streamsOf.get(nc);
  if (!open) {
    const set = new Set<BusStream>();
    open = set;
    streamsOf.set(nc, set);
    void (async () => {
      for await (const st of nc.status()) {
        if (st.type === "disconnect") for (const s of [...set]) s.lose();
      }
    })().catch(() => undefined);
  }
  open.add(stream);
}

function decodeStatus(data: Uint8Array): Status | undefined {
  try {
    return Status.decode(data);
  } catch {
    return undefined;
  }
}
