// pods/portforward over SPDY (raw, or tunnelled in a WebSocket): kubectl
// opens an error stream and a data stream per local connection, paired by
// their requestid; each pair becomes one bus stream to the node agent,
// which connects to the port on the pod. Protocol notes: ./README.md.
import { setMaxListeners } from "node:events";
import type { Duplex } from "node:stream";
import type { WebSocket } from "ws";
import { badRequest, statusOf, type Status } from "@choreo/kit";
import type { BusStream } from "@choreo/kit/bus";
import type { Logger } from "@choreo/kit/log";
import type { PodForwardQuery, PodForwardTarget, PodStreams } from "./pod-streams.js";
import { RstStatus } from "./spdy/framer.js";
import { SpdySession, type SpdyStream } from "./spdy/session.js";

/** The SPDY subprotocol of port-forward (X-Stream-Protocol-Version), and its WebSocket tunnel (kubectl 1.31+). */
export const PORT_FORWARD_PROTOCOL = "portforward.k8s.io";
export const PORT_FORWARD_TUNNEL_PROTOCOL = "SPDY/3.1+portforward.k8s.io";

/** Channels of a forwarded connection on the bus (the node agent's ForwardChannel). */
const ToPod = 0;
const FromPod = 1;

/** How long the second stream of a pair may take to arrive (kubelet: the stream creation timeout). */
const PAIR_TIMEOUT_MS = 30_000;

/** What a port-forward session needs. */
export interface PortForwardContext {
  streams: Pick<PodStreams, "openForward">;
  q: PodForwardQuery;
  target: PodForwardTarget;
  log: Logger;
  /** The api is closing: every connection ends. */
  signal: AbortSignal;
  /** Forwarded connections open now (a gauge), if counted. */
  onConnections?: (delta: number) => void;
}

interface Pair {
  error?: SpdyStream;
  data?: SpdyStream;
  timer: NodeJS.Timeout;
}

/** Serves one upgraded port-forward connection until the client leaves or the api closes. */
export async function servePortForward(transport: Duplex, ctx: PortForwardContext): Promise<void> {
  const pairs = new Map<string, Pair>();
  const forwards = new Set<Promise<void>>();
  const session: SpdySession = new SpdySession(transport, {
    onStream: (stream) => {
      const type = stream.header("streamtype");
      const id = stream.header("requestid");
      if ((type !== "error" && type !== "data") || !id) {
        // kubelet answers streams it cannot use with a reset.
        ctx.log.debug({ pod: `${ctx.q.namespace}/${ctx.q.name}`, type, id }, "port-forward stream refused");
        stream.reset(RstStatus.RefusedStream);
        return;
      }
      void stream.reply();
      let pair = pairs.get(id);
      if (!pair) {
        pair = { timer: setTimeout(() => expire(id), PAIR_TIMEOUT_MS) };
        pairs.set(id, pair);
      }
      if (pair[type]) {
        stream.reset(RstStatus.StreamInUse);
        return;
      }
      pair[type] = stream;
      const { error, data } = pair;
      if (error && data) {
        clearTimeout(pair.timer);
        pairs.delete(id);
        const p = forward(error, data, ctx, session.signal);
        forwards.add(p);
        void p.finally(() => forwards.delete(p));
      }
    },
  });
  const expire = (id: string): void => {
    const pair = pairs.get(id);
    pairs.delete(id);
    const half = pair?.error ?? pair?.data;
    if (pair?.error) void pair.error.write(Buffer.from(`timeout waiting for the data stream of request ${id}`)).then(() => pair.error?.end());
    half?.reset(RstStatus.Cancel);
  };
  const leave = (): void => session.close();
  if (ctx.signal.aborted) leave();
  ctx.signal.addEventListener("abort", leave, { once: true });
  await session.run();
  ctx.signal.removeEventListener("abort", leave);
  for (const pair of pairs.values()) clearTimeout(pair.timer);
  await Promise.allSettled([...forwards]);
}

/** One forwarded connection: the agent's bus stream bridged to kubectl's data stream; failures are written on its error stream. */
async function forward(error: SpdyStream, data: SpdyStream, ctx: PortForwardContext, closed: AbortSignal): Promise<void> {
  const port = Number(data.header("port"));
  const pod = `${ctx.q.namespace}/${ctx.q.name}`;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    await fail(error, data, `invalid port ${JSON.stringify(data.header("port"))}: a port is 1-65535`);
    return;
  }
  // This connection ends when kubectl resets a stream or the session goes.
  const ac = new AbortController();
  setMaxListeners(0, ac.signal);
  const stop = (): void => ac.abort();
  for (const s of [closed, error.signal, data.signal]) s.addEventListener("abort", stop, { once: true });
  let bus: BusStream;
  try {
    bus = await ctx.streams.openForward(ctx.q, ctx.target, port, ac.signal);
  } catch (err) {
    await fail(error, data, statusOf(err).message);
    for (const s of [closed, error.signal, data.signal]) s.removeEventListener("abort", stop);
    return;
  }
  ctx.onConnections?.(+1);
  ctx.log.debug({ pod, port }, "port-forward connection open");
  const toPod = (async () => {
    for await (const chunk of data.data()) {
      if (!(await bus.send(ToPod, chunk))) return;
    }
    // kubectl's local connection half-closed (its FIN): the pod's connection is half-closed too.
    if (!data.signal.aborted) bus.closeChannel(ToPod);
  })();
  let final: Status | undefined;
  try {
    for await (const ev of bus.events()) {
      if (ev.kind === "data" && ev.channel === FromPod) await data.write(ev.data);
      else if (ev.kind === "end") {
        if (ev.status && ev.status.status !== "Success") final = ev.status;
        break;
      }
    }
  } catch (err) {
    final = statusOf(err);
  }
  if (!final && !ac.signal.aborted && bus.why && bus.why !== "ended") {
    final = bus.abortStatus ?? statusOf(new Error(bus.why === "idle" ? "the node agent stopped answering" : "the node agent gave the connection up"));
  }
  if (final) await error.write(Buffer.from(final.message));
  await data.end();
  await error.end();
  // Tells the agent this side is done too (its copy towards the pod stops now, not at its idle timeout).
  bus.end();
  bus.close();
  await toPod.catch(() => undefined);
  for (const s of [closed, error.signal, data.signal]) s.removeEventListener("abort", stop);
  ctx.onConnections?.(-1);
  ctx.log.debug({ pod, port, why: bus.why, error: final?.message }, "port-forward connection closed");
}

/** A connection that could not be made: the reason on the error stream (kubectl prints it), then both streams closed. */
async function fail(error: SpdyStream, data: SpdyStream, message: string): Promise<void> {
  await error.write(Buffer.from(message));
  await error.end();
  await data.end();
}

/** The WebSocket channel protocol of port-forward (client libraries: @kubernetes/client-node, the Python client). */
export const PORT_FORWARD_CHANNEL_PROTOCOL = "v4.channel.k8s.io";

/** The `ports` of a channel-protocol port-forward (repeated or comma-separated, as Kubernetes reads them); throws a 400 naming what is wrong. */
export function forwardPorts(url: URL): number[] {
  const raw = [...url.searchParams.getAll("ports"), ...url.searchParams.getAll("port")].flatMap((v) => v.split(","));
  if (raw.length === 0) throw badRequest('query parameter "ports" is required');
  return raw.map((p) => {
    const port = Number(p);
    if (!/^\d+$/.test(p.trim()) || !Number.isInteger(port) || port < 1 || port > 65535)
      throw badRequest(`invalid port ${JSON.stringify(p)}: a port is 1-65535`);
    return port;
  });
}

/**
 * pods/portforward over a WebSocket's channels (v4.channel.k8s.io, as the
 * kubelet serves it): for the i-th port, channel 2i carries data both ways
 * and 2i+1 errors towards the client; each channel starts with the port
 * (2 bytes, little-endian). Every port is connected at once; the WebSocket
 * closes when every connection has ended.
 */
export async function serveChannelPortForward(ws: WebSocket, ports: number[], ctx: PortForwardContext): Promise<void> {
  const ac = new AbortController();
  setMaxListeners(0, ac.signal);
  const leave = (): void => ac.abort();
  ws.once("close", leave);
  if (ctx.signal.aborted) leave();
  ctx.signal.addEventListener("abort", leave, { once: true });
  const send = (channel: number, data: Uint8Array): Promise<void> =>
    new Promise((resolve) => {
      if (ws.readyState !== ws.OPEN) return resolve();
      const frame = Buffer.allocUnsafe(data.length + 1);
      frame[0] = channel;
      frame.set(data, 1);
      ws.send(frame, { binary: true }, () => resolve());
    });
  const buses: (BusStream | undefined)[] = [];
  // Input for a port before its connection is open waits, in order, per port.
  const queues = ports.map(() => Promise.resolve());
  let pending = 0;
  const opened = ports.map(async (port, i) => {
    const prefix = Buffer.alloc(2);
    prefix.writeUInt16LE(port);
    await send(2 * i, prefix);
    await send(2 * i + 1, prefix);
    try {
      buses[i] = await ctx.streams.openForward(ctx.q, ctx.target, port, ac.signal);
    } catch (err) {
      await send(2 * i + 1, Buffer.from(statusOf(err).message));
      return;
    }
    return buses[i];
  });
  ws.on("message", (data: Buffer, isBinary: boolean) => {
    if (!isBinary || data.length < 1) return;
    const channel = data[0] ?? 0;
    const i = channel / 2;
    if (!Number.isInteger(i) || i >= ports.length) return;
    const body = data.subarray(1);
    pending++;
    if (pending >= 16) ws.pause();
    queues[i] = (queues[i] ?? Promise.resolve()).then(async () => {
      const bus = await opened[i];
      if (bus && body.length > 0) await bus.send(ToPod, body);
      pending--;
      if (pending < 8 && ws.isPaused) ws.resume();
    });
  });
  await Promise.all(
    opened.map(async (p, i) => {
      const bus = await p;
      if (!bus) return;
      ctx.onConnections?.(+1);
      try {
        for await (const ev of bus.events()) {
          if (ev.kind === "data" && ev.channel === FromPod) await send(2 * i, ev.data);
          else if (ev.kind === "end") {
            if (ev.status && ev.status.status !== "Success") await send(2 * i + 1, Buffer.from(ev.status.message));
            break;
          }
        }
      } catch (err) {
        await send(2 * i + 1, Buffer.from(statusOf(err).message));
      }
      bus.end();
      bus.close();
      ctx.onConnections?.(-1);
    }),
  );
  ctx.signal.removeEventListener("abort", leave);
  if (ws.readyState === ws.OPEN) ws.close(1000);
}
