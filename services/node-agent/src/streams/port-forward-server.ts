import { connect, type Socket } from "node:net";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { badRequest, failure, notFound, unavailable, type Status } from "@choreo/kit";
import { agentPortForwardSubject, type BusStream, type BusStreamOptions } from "@choreo/kit/bus";
import { onAbort, type Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { PodPortForwardRequest } from "@choreo/kit/gen/choreo/node/v1/exec";
import type { Runtime } from "../runtime/runtime.js";
import { acceptStream, replyStreamError, serveRequests } from "./serve-requests.js";

/** The port-forward channels on the bus: bytes towards the pod, and back. */
export const ForwardChannel = { ToPod: 0, FromPod: 1 } as const;

/** How long a connection to the pod's port may take before the request fails. */
const CONNECT_TIMEOUT_MS = 5_000;
/** How long the other direction may go on once one is done. */
const CLOSE_GRACE_MS = 1_000;

/** Options of {@link PortForwardServer}. */
export interface PortForwardServerOptions {
  nc: NatsConnection;
  /** The node whose `choreo.agent.<node>.portforward` requests this server answers. */
  node: string;
  runtime: Pick<Runtime, "name" | "podStatus" | "execStream">;
  /** The agent's pod cache, by `namespace/name`: a request for another incarnation of a pod is refused. */
  pods: { get(key: string): Pod | undefined };
  log: Logger;
  /** Heartbeat, idle timeout and window of the streams (defaults: bus-stream.ts). */
  stream?: Pick<BusStreamOptions, "heartbeatMs" | "idleTimeoutMs" | "window">;
  /** Connections opened and their bytes (Prometheus, optional). */
  onConnection?: (open: number) => void;
}

/**
 * Answers the api's port-forward requests for one node (protocol:
 * ./README.md): one TCP connection to the pod's IP and port per request,
 * acked once connected (a refused port is the request's error Status, which
 * the api writes on kubectl's error stream), then bytes both ways under the
 * stream's credit; the agent's `end` follows the pod side's close. The
 * connection is destroyed when the api goes away or the agent stops.
 */
export class PortForwardServer implements Runnable {
  readonly name: string;
  private readonly log: Logger;
  private open = 0;

  constructor(private readonly opts: PortForwardServerOptions) {
    this.name = `port-forward-server-${opts.node}`;
    this.log = opts.log.child({ subsystem: "portforward", node: opts.node });
  }

  /** Connections open now (tests: kubectl gone → 0). */
  get connections(): number {
    return this.open;
  }

  start(outer: AbortSignal): Promise<void> {
    return serveRequests(this.opts.nc, agentPortForwardSubject(this.opts.node), outer, this.log, (msg, signal) => this.serve(msg, signal));
  }

  private async serve(msg: Msg, signal: AbortSignal): Promise<void> {
    let req: PodPortForwardRequest;
    try {
      req = PodPortForwardRequest.decode(msg.data);
    } catch {
      replyStreamError(msg, badRequest("undecodable port-forward request").status);
      return;
    }
    if (!req.inbox || !req.uid || !Number.isInteger(req.port) || req.port < 1 || req.port > 65535) {
      replyStreamError(msg, badRequest("a port-forward request needs a pod uid, a port in 1-65535 and an inbox").status);
      return;
    }
    const cached = this.opts.pods.get(`${req.namespace}/${req.name}`);
    if (cached && cached.metadata?.uid !== req.uid) {
      replyStreamError(msg, notFound("pods", req.name).status);
      return;
    }
    const { runtime } = this.opts;
    if (!runtime.execStream) {
      replyStreamError(msg, badRequest(`the ${runtime.name} runtime of node ${this.opts.node} runs no processes: there is no port to forward to`).status);
      return;
    }
    const ip = runtime.podStatus(req.uid)?.podIp;
    if (!ip) {
      replyStreamError(msg, badRequest(`pod ${req.namespace}/${req.name} is not running on node ${this.opts.node} (no sandbox yet)`).status);
      return;
    }
    let socket: Socket;
    try {
      socket = await dial(ip, req.port, signal);
    } catch (err) {
      replyStreamError(msg, forwardError(req, err));
      return;
    }
    // The agent's stop is told to the api with why (a 503), not as a bare abort.
    const stream = acceptStream(msg, { ...this.opts.stream, nc: this.opts.nc, remote: req.inbox });
    const unlisten = onAbort(signal, () => stream.abort(unavailable(`node agent for node ${this.opts.node} is stopping`).status, "shutdown"));
    this.count(+1);
    this.log.debug({ pod: `${req.namespace}/${req.name}`, port: req.port }, "port-forward connection open");
    try {
      await bridge(socket, stream, req);
    } finally {
      unlisten();
      socket.destroy();
      stream.close();
      this.count(-1);
      this.log.debug({ pod: `${req.namespace}/${req.name}`, port: req.port, why: stream.why }, "port-forward connection closed");
    }
  }

  private count(delta: number): void {
    this.open += delta;
    this.opts.onConnection?.(this.open);
  }
}

/** A TCP connection to ip:port, or the error that prevented it (refused, unreachable, timed out, aborted). */
function dial(host: string, port: number, signal: AbortSignal): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, noDelay: true });
    const fail = (err: Error): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", abort);
      socket.destroy();
      reject(err);
    };
    const abort = (): void => fail(new Error("the node agent is stopping"));
    const timer = setTimeout(() => fail(new Error(`connect to ${host}:${port} timed out after ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
    if (signal.aborted) return abort();
    signal.addEventListener("abort", abort, { once: true });
    socket.once("error", fail);
    socket.once("connect", () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", abort);
      socket.off("error", fail);
      resolve(socket);
    });
  });
}

/**
 * Bytes both ways until both are done: the pod's side to channel 1 (then the
 * stream's end), the api's channel 0 to the socket (its close half-closes the
 * connection). A socket error ends the stream with a Status saying so.
 */
async function bridge(socket: Socket, stream: BusStream, req: PodPortForwardRequest): Promise<void> {
  let socketError: Error | undefined;
  socket.on("error", (err) => {
    socketError = err;
  });
  const toApi = (async () => {
    try {
      for await (const chunk of socket) {
        if (!(await stream.send(ForwardChannel.FromPod, chunk as Buffer))) return;
      }
    } catch (err) {
      socketError ??= err as Error;
    }
    stream.end(socketError ? forwardError(req, socketError) : undefined);
  })();
  const toPod = (async () => {
    for await (const ev of stream.events()) {
      if (ev.kind === "data" && ev.channel === ForwardChannel.ToPod) {
        if (socket.destroyed) continue;
        if (!socket.write(ev.data)) await new Promise<void>((resolve) => socket.once("drain", resolve).once("close", resolve));
      } else if ((ev.kind === "close" && ev.channel === ForwardChannel.ToPod) || ev.kind === "end") {
        // kubectl's local connection closed its sending side: so does this one.
        if (!socket.destroyed) socket.end();
      }
    }
  })();
  // The api's side stops (end, abort, idle, close): nothing more to wait for from the pod.
  const stopped = new Promise<void>((resolve) => {
    if (stream.signal.aborted) resolve();
    else stream.signal.addEventListener("abort", () => resolve(), { once: true });
  });
  await Promise.race([toApi, stopped]);
  // The pod's side is done: what the api still had in flight gets a moment (as containerd's CRI port-forward does).
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([toPod, stopped, new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS)))]);
  clearTimeout(timer);
  socket.destroy();
  stream.close();
  await Promise.allSettled([toApi, toPod]);
}

/** The kubelet's words for a connection that failed, written on kubectl's error stream. */
export function forwardError(req: Pick<PodPortForwardRequest, "namespace" | "name" | "uid" | "port">, err: unknown): Status {
  const why = err instanceof Error ? err.message : String(err);
  return failure(500, "InternalError", `error forwarding port ${req.port} to pod ${req.namespace}/${req.name}, uid ${req.uid}: ${why}`);
}
