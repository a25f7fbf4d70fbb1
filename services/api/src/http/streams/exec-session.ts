// One pods/exec or pods/attach session, whatever carries it to the client:
// the bus stream to the node agent opened, the client's input pumped in,
// the process' output pumped out, and the end as Kubernetes' Status on the
// error channel. The peers: a WebSocket (v5/v4.channel.k8s.io) and SPDY/3.1
// streams (v4.channel.k8s.io, kubectl 1.30 and older).
import { setMaxListeners } from "node:events";
import type { Duplex } from "node:stream";
import { badRequest, internal, statusOf, unavailable, type Status } from "@choreo/kit";
import type { BusStream } from "@choreo/kit/bus";
import type { Logger } from "@choreo/kit/log";
import { statusToKubeJson } from "@choreo/kit/kube-json";
import type { WebSocket } from "ws";
import type { PodStreamQuery } from "./pod-streams.js";
import { RstStatus } from "./spdy/framer.js";
import { SpdySession, type SpdyStream } from "./spdy/session.js";

/** Kubernetes' remotecommand channels. */
export const Channel = { Stdin: 0, Stdout: 1, Stderr: 2, Error: 3, Resize: 4, Close: 255 } as const;

/** Unsent stdin messages at which the client's socket is paused. */
const STDIN_HIGH_WATER = 16;

/** The client's side of a session. */
export interface ExecPeer {
  /** Aborted when the client went away. */
  readonly left: AbortSignal;
  /** Starts feeding the client's input (stdin, its end, terminal sizes) into the open stream. */
  input(stream: BusStream): void;
  /** The process' output on a channel (stdout, stderr); resolved once the client's transport took it. */
  output(channel: number, data: Uint8Array): Promise<void>;
  /** The session's last word (the exit as a Status; none when the client left), then the transport's close. */
  finish(status: Status | undefined): Promise<void>;
}

/** What a session needs of the api. */
export interface ExecSessionContext {
  log: Logger;
  /** The api is closing. */
  signal: AbortSignal;
}

/** Runs a session: opens the bus stream, bridges both ways, finishes with the exit or why it ended. */
export async function runExecSession(
  o: ExecSessionContext,
  peer: ExecPeer,
  q: PodStreamQuery,
  open: (signal: AbortSignal) => Promise<BusStream>,
): Promise<void> {
  const ac = new AbortController();
  setMaxListeners(0, ac.signal);
  const leave = (): void => ac.abort();
  if (peer.left.aborted) leave();
  peer.left.addEventListener("abort", leave, { once: true });
  o.signal.addEventListener("abort", leave, { once: true });
  const pod = `${q.namespace}/${q.name}`;
  const cleanup = (): void => {
    o.signal.removeEventListener("abort", leave);
    peer.left.removeEventListener("abort", leave);
  };
  let s: BusStream;
  try {
    s = await open(ac.signal);
  } catch (err) {
    await peer.finish(statusOf(err));
    cleanup();
    return;
  }
  o.log.debug({ pod, attach: q.attach, stdin: q.stdin, tty: q.tty }, "stream session open");
  peer.input(s);
  let final: Status | undefined;
  try {
    for await (const ev of s.events()) {
      if (ev.kind === "data") {
        if ((ev.channel === Channel.Stdout && q.stdout) || (ev.channel === Channel.Stderr && (q.stderr || q.tty))) {
          await peer.output(ev.channel, ev.data);
        }
      } else if (ev.kind === "end") {
        final = ev.status ?? SUCCESS;
        break;
      }
    }
  } catch (err) {
    final = statusOf(err);
  }
  if (!final) {
    // The client left (the agent was told by the stream's signal), the api is stopping, or the agent went away.
    if (o.signal.aborted) final = unavailable("the api is shutting down").status;
    else if (!ac.signal.aborted) {
      final =
        s.why === "idle"
          ? unavailable("the node agent stopped answering").status
          : (s.abortStatus ?? internal("the stream to the node agent ended unexpectedly").status);
    }
  }
  s.close();
  cleanup();
  o.log.debug({ pod, status: final?.status, reason: final?.reason, why: s.why }, "stream session closed");
  await peer.finish(final);
}

const SUCCESS: Status = { ...unavailable("").status, status: "Success", code: 0, reason: "", message: "" };

/** The error channel's JSON (v4 and later): the Status, or `Success` as kubelet writes it. */
function statusBody(status: Status): Buffer {
  const body = status.status === "Success" ? { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success" } : statusToKubeJson(status);
  return Buffer.from(JSON.stringify(body));
}

/**
 * A WebSocket client (v5.channel.k8s.io / v4.channel.k8s.io): each binary
 * message is a channel byte and its data; v5's close message (255, channel)
 * ends stdin. Input that arrives before the stream is open waits (kubectl
 * sends its terminal size at once); stdin is paused after 16 unsent messages.
 */
export function webSocketPeer(ws: WebSocket): ExecPeer {
  const left = new AbortController();
  ws.once("close", () => left.abort());
  const early: Buffer[] = [];
  let stream: BusStream | undefined;
  let queue = Promise.resolve();
  let pending = 0;
  const forward = (s: BusStream, data: Buffer): void => {
    const channel = data[0];
    const body = data.subarray(1);
    pending++;
    if (pending >= STDIN_HIGH_WATER) ws.pause();
    queue = queue.then(async () => {
      if (channel === Channel.Close) {
        if (body[0] === Channel.Stdin) s.closeChannel(Channel.Stdin);
      } else if (channel === Channel.Stdin || channel === Channel.Resize) {
        await s.send(channel, body);
      }
      pending--;
      if (pending < STDIN_HIGH_WATER / 2 && ws.isPaused) ws.resume();
    });
  };
  ws.on("message", (data: Buffer, isBinary: boolean) => {
    if (!isBinary || data.length === 0) return;
    if (stream) forward(stream, data);
    else early.push(data);
  });
  return {
    left: left.signal,
    input: (s) => {
      stream = s;
      for (const d of early.splice(0)) forward(s, d);
    },
    output: (channel, data) => sendFrame(ws, channel, data),
    finish: async (status) => {
      if (status) await sendFrame(ws, Channel.Error, statusBody(status));
      if (ws.readyState === ws.OPEN) ws.close(1000);
    },
  };
}

/** One channel message, resolved once written (back-pressure towards the agent). */
function sendFrame(ws: WebSocket, channel: number, data: Uint8Array): Promise<void> {
  if (ws.readyState !== ws.OPEN) return Promise.resolve();
  const frame = Buffer.allocUnsafe(data.length + 1);
  frame[0] = channel;
  frame.set(data, 1);
  return new Promise((resolve) => ws.send(frame, { binary: true }, () => resolve()));
}

/** The SPDY streams of an exec/attach, by kubectl's streamtype header. */
export interface SpdyExecStreams {
  error: SpdyStream;
  stdin?: SpdyStream;
  stdout?: SpdyStream;
  stderr?: SpdyStream;
  resize?: SpdyStream;
}

/**
 * A SPDY/3.1 client (v4.channel.k8s.io): one stream per channel, opened by
 * the client. stdin's FIN ends stdin; the resize stream carries one JSON
 * size per line; the end closes stdout and stderr, writes the Status on the
 * error stream, and closes the connection.
 */
export function spdyPeer(session: SpdySession, streams: SpdyExecStreams): ExecPeer {
  const byChannel = new Map<number, SpdyStream | undefined>([
    [Channel.Stdout, streams.stdout],
    [Channel.Stderr, streams.stderr],
  ]);
  return {
    left: session.signal,
    input: (s) => {
      const { stdin, resize } = streams;
      if (stdin) {
        void (async () => {
          for await (const chunk of stdin.data()) {
            if (!(await s.send(Channel.Stdin, chunk))) return;
          }
          if (stdin.remoteEnded) s.closeChannel(Channel.Stdin);
        })();
      }
      if (resize) {
        void (async () => {
          let text = "";
          for await (const chunk of resize.data()) {
            text += chunk.toString();
            let nl: number;
            while ((nl = text.indexOf("\n")) >= 0) {
              const line = text.slice(0, nl).trim();
              text = text.slice(nl + 1);
              if (line && !(await s.send(Channel.Resize, Buffer.from(line)))) return;
            }
          }
        })();
      }
    },
    output: async (channel, data) => {
      await byChannel.get(channel)?.write(data);
    },
    finish: async (status) => {
      await streams.stdout?.end();
      await streams.stderr?.end();
      if (status) await streams.error.write(statusBody(status));
      await streams.error.end();
      session.close();
    },
  };
}

/** The channel protocol served over SPDY (kubectl ≤ 1.30 offers it first). */
export const SPDY_CHANNEL_PROTOCOL = "v4.channel.k8s.io";

/** How long the client has to open the streams its query asked for (kubelet's stream creation timeout). */
const STREAMS_TIMEOUT_MS = 30_000;

/** Serves an exec/attach over a SPDY/3.1 connection: waits for the streams the query implies, then runs the session. */
export async function serveSpdyExec(
  transport: Duplex,
  o: ExecSessionContext,
  q: PodStreamQuery,
  open: (signal: AbortSignal) => Promise<BusStream>,
): Promise<void> {
  const expected = [
    "error",
    ...(q.stdin ? ["stdin"] : []),
    ...(q.stdout ? ["stdout"] : []),
    ...(q.stderr && !q.tty ? ["stderr"] : []),
    ...(q.tty ? ["resize"] : []),
  ];
  const got: Partial<Record<string, SpdyStream>> = {};
  let ready: () => void = () => undefined;
  const all = new Promise<boolean>((resolve) => (ready = () => resolve(true)));
  const session = new SpdySession(transport, {
    onStream: (st) => {
      const type = st.header("streamtype");
      if (!expected.includes(type) || got[type]) {
        st.reset(RstStatus.RefusedStream);
        return;
      }
      void st.reply();
      got[type] = st;
      if (expected.every((t) => got[t])) ready();
    },
  });
  const running = session.run();
  let timer: NodeJS.Timeout | undefined;
  const arrived = await Promise.race([
    all,
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), STREAMS_TIMEOUT_MS))),
    running.then(() => false),
  ]);
  clearTimeout(timer);
  const error = got["error"];
  if (!arrived || !error) {
    o.log.debug({ pod: `${q.namespace}/${q.name}`, expected, got: Object.keys(got) }, "spdy exec streams missing");
    if (error) {
      await error.write(statusBody(badRequest(`timed out waiting for the client's streams (${expected.join(", ")})`).status));
      await error.end();
    }
    session.close();
    await running;
    return;
  }
  await runExecSession(o, spdyPeer(session, { ...got, error }), q, open);
  await running;
}
