import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Status } from "@choreo/kit";
import { encodeLogError, LOG_CHUNK_BYTES, LogFrame, logFrameHeaders } from "@choreo/kit/bus";

/** Why a stream stopped early. */
export type StopReason = "cancel" | "idle" | "shutdown" | "closed";

/** Options of {@link LogStream}. */
export interface LogStreamOptions {
  nc: NatsConnection;
  /** The api's inbox: frames go there; `<inbox>.hb` and `<inbox>.cancel` come back. */
  inbox: string;
  /** The agent's own shutdown. */
  signal: AbortSignal;
  heartbeatMs: number;
  idleTimeoutMs: number;
  window: number;
}

/**
 * The sending half of one log stream: data frames under a credit window
 * (the api reports the frames it consumed on `<inbox>.hb`), heartbeats when
 * idle, and a `signal` that aborts on `<inbox>.cancel`, on the api's
 * silence for `idleTimeoutMs`, on the agent's shutdown, or on `close`.
 */
export class LogStream {
  /** Aborts when the stream must stop; give it to the runtime. */
  readonly signal: AbortSignal;
  /** Set once the stream stopped early. */
  why: StopReason | undefined;
  private readonly ac = new AbortController();
  private readonly sub: Subscription;
  private readonly timer: NodeJS.Timeout;
  private readonly onOuterAbort = (): void => this.stop("shutdown");
  private sent = 0;
  private consumed = 0;
  private lastHeard = Date.now();
  private lastSent = Date.now();
  private wake: (() => void) | undefined;

  constructor(private readonly o: LogStreamOptions) {
    this.signal = this.ac.signal;
    this.sub = o.nc.subscribe(`${o.inbox}.*`, {
      callback: (err, m) => {
        if (err) return;
        this.lastHeard = Date.now();
        if (m.subject.endsWith(".cancel")) this.stop("cancel");
        else {
          const n = Number(new TextDecoder().decode(m.data));
          if (Number.isSafeInteger(n) && n > this.consumed) this.consumed = n;
          this.wakeUp();
        }
      },
    });
    this.timer = setInterval(() => this.tick(), Math.max(10, Math.min(1_000, o.heartbeatMs / 2)));
    this.timer.unref();
    if (o.signal.aborted) this.stop("shutdown");
    else o.signal.addEventListener("abort", this.onOuterAbort, { once: true });
  }

  /** Sends a chunk as data frames, waiting for credit; false once the stream stopped. */
  async send(chunk: Uint8Array): Promise<boolean> {
    for (let off = 0; off < chunk.length; off += LOG_CHUNK_BYTES) {
      while (!this.signal.aborted && this.sent - this.consumed >= this.o.window) {
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
      if (this.signal.aborted) return false;
      this.publish(LogFrame.Data, chunk.subarray(off, off + LOG_CHUNK_BYTES));
      this.sent++;
    }
    return !this.signal.aborted;
  }

  /** The log ended: tells the api (unless it already left). */
  end(): void {
    if (!this.signal.aborted) this.publish(LogFrame.End);
  }

  /** The stream failed: tells the api why (unless it already left). */
  fail(status: Status): void {
    if (this.why === "cancel" || this.why === "idle" || this.why === "closed") return;
    this.publish(LogFrame.Error, encodeLogError(status));
  }

  /** Releases the subscription and timer; aborts `signal`. */
  close(): void {
    this.stop("closed");
    clearInterval(this.timer);
    this.o.signal.removeEventListener("abort", this.onOuterAbort);
    this.sub.unsubscribe();
  }

  private tick(): void {
    const now = Date.now();
    if (now - this.lastHeard > this.o.idleTimeoutMs) this.stop("idle");
    else if (now - this.lastSent >= this.o.heartbeatMs) this.publish(LogFrame.Heartbeat);
  }

  private stop(why: StopReason): void {
    if (this.signal.aborted) return;
    this.why = why;
    this.ac.abort();
    this.wakeUp();
  }

  private wakeUp(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private publish(kind: LogFrame, data: Uint8Array = new Uint8Array()): void {
    this.lastSent = Date.now();
    try {
      this.o.nc.publish(this.o.inbox, data, { headers: logFrameHeaders(kind) });
    } catch {
      // The connection is closing: the api notices the silence.
    }
  }
}
