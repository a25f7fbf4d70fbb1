// pods/exec and pods/attach: the HTTP upgrade to a WebSocket (Kubernetes'
// channel protocol, v5.channel.k8s.io / v4.channel.k8s.io) bridged onto a
// bus stream to the pod's node agent. Protocol notes: ./README.md.
import { setMaxListeners } from "node:events";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { badRequest, internal, methodNotAllowed, statusOf, unavailable, type Status } from "@choreo/kit";
import type { BusStream } from "@choreo/kit/bus";
import type { Logger } from "@choreo/kit/log";
import { statusToKubeJson } from "@choreo/kit/kube-json";
import { WebSocketServer, type WebSocket } from "ws";
import { flag } from "../context.js";
import { codeOf } from "../respond.js";
import { parseRoute, type ResourceRoute } from "../routes.js";
import type { PodStreamQuery, PodStreams } from "./pod-streams.js";

/** The channel subprotocols served, preferred first (v5 adds the close channel, 255). */
export const CHANNEL_PROTOCOLS = ["v5.channel.k8s.io", "v4.channel.k8s.io"] as const;

/** Kubernetes' remotecommand channels. */
export const Channel = { Stdin: 0, Stdout: 1, Stderr: 2, Error: 3, Resize: 4, Close: 255 } as const;

/** The subresources streamed over an upgrade. */
export const STREAM_SUBRESOURCES = ["exec", "attach"] as const;

/** Unsent stdin messages at which the client's socket is paused. */
const STDIN_HIGH_WATER = 16;

/** Options of {@link upgradeHandler}. */
export interface UpgradeOptions {
  streams: PodStreams | undefined;
  log: Logger;
  /** The gateway's authentication (throws 401). */
  authenticate(req: IncomingMessage, pathname: string): void;
  /** Aborts every open session (the gateway closes). */
  signal: AbortSignal;
}

/** The HTTP server's 'upgrade' listener: WebSocket sessions for pods/exec and pods/attach, a Status for anything else. */
export function upgradeHandler(o: UpgradeOptions): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  // Every open session listens to this one signal: no listener limit.
  setMaxListeners(0, o.signal);
  const wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: 1024 * 1024,
    handleProtocols: (offered) => CHANNEL_PROTOCOLS.find((p) => offered.has(p)) ?? false,
  });
  return (req, socket, head) => {
    socket.on("error", () => undefined);
    let url: URL;
    try {
      url = new URL(req.url ?? "/", "http://gateway");
    } catch {
      url = new URL("http://gateway/");
    }
    void prepare(o, req, url)
      .then(({ q, open }) => {
        wss.handleUpgrade(req, socket, head, (ws) => void session(o, ws, q, open));
      })
      .catch((err: unknown) => {
        const status = statusOf(err);
        const code = codeOf(status);
        if (code >= 500) o.log.warn({ err, path: url.pathname }, "stream upgrade failed");
        else o.log.debug({ path: url.pathname, code, message: status.message }, "stream upgrade refused");
        refuse(socket, { ...status, code });
      });
  };
}

/** Everything checked before the upgrade (so errors are HTTP Status responses, as Kubernetes answers them). */
async function prepare(o: UpgradeOptions, req: IncomingMessage, url: URL): Promise<{ q: PodStreamQuery; open: (signal: AbortSignal) => Promise<BusStream> }> {
  o.authenticate(req, url.pathname);
  const route = parseRoute(url.pathname);
  if (route.type !== "resource" || route.info.resource !== "pods" || !isStreamSubresource(route.subresource)) {
    throw badRequest(`only pods/exec and pods/attach are served over an upgrade, not ${url.pathname}`);
  }
  if (req.method !== "GET" && req.method !== "POST") throw methodNotAllowed(`${req.method ?? ""} is not supported on pods/${route.subresource}`);
  const q = queryOf(route, url);
  if (!o.streams) throw badRequest(`pods/${route.subresource} is not served by this api (no node agents to reach)`);
  const streams = o.streams;
  const target = await streams.resolve(q);
  const upgrade = String(req.headers.upgrade ?? "").toLowerCase();
  if (upgrade !== "websocket") {
    throw badRequest(
      `choreo serves pods/${route.subresource} over WebSocket (${CHANNEL_PROTOCOLS.join(", ")}; kubectl 1.31 or later), not ${req.headers.upgrade ?? "this upgrade"}`,
    );
  }
  const offered = String(req.headers["sec-websocket-protocol"] ?? "")
    .split(",")
    .map((s) => s.trim());
  if (!CHANNEL_PROTOCOLS.some((p) => offered.includes(p))) {
    throw badRequest(
      `pods/${route.subresource} speaks the WebSocket subprotocols ${CHANNEL_PROTOCOLS.join(", ")}; the client offered ${offered.filter(Boolean).join(", ") || "none"}`,
    );
  }
  return { q, open: (signal) => streams.open(q, target, signal) };
}

function isStreamSubresource(s: string): s is (typeof STREAM_SUBRESOURCES)[number] {
  return (STREAM_SUBRESOURCES as readonly string[]).includes(s);
}

/** The exec/attach query: command (repeated), container, stdin, stdout, stderr, tty. */
export function queryOf(route: ResourceRoute, url: URL): PodStreamQuery {
  const container = url.searchParams.get("container") ?? "";
  return {
    namespace: route.namespace,
    name: route.name,
    ...(container ? { container } : {}),
    command: route.subresource === "exec" ? url.searchParams.getAll("command") : [],
    stdin: flag(url, "stdin"),
    stdout: flag(url, "stdout"),
    stderr: flag(url, "stderr"),
    tty: flag(url, "tty"),
    attach: route.subresource === "attach",
  };
}

/** A Status as the answer to a refused upgrade, on the raw socket. */
function refuse(socket: Duplex, status: Status): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(statusToKubeJson(status));
  socket.end(
    `HTTP/1.1 ${status.code} ${status.reason || "Error"}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Cache-Control: no-cache, private\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** One upgraded session: the bus stream opened, then bytes bridged both ways until the agent's end or either side leaving. */
async function session(o: UpgradeOptions, ws: WebSocket, q: PodStreamQuery, open: (signal: AbortSignal) => Promise<BusStream>): Promise<void> {
  const ac = new AbortController();
  const leave = (): void => ac.abort();
  ws.once("close", leave);
  o.signal.addEventListener("abort", leave, { once: true });
  const pod = `${q.namespace}/${q.name}`;
  // Until the stream is open, the client's messages wait here (kubectl sends its terminal size at once).
  const early: Buffer[] = [];
  let stream: BusStream | undefined;
  let queue = Promise.resolve();
  let pending = 0;
  ws.on("message", (data: Buffer, isBinary: boolean) => {
    if (!isBinary || data.length === 0) return;
    if (!stream) {
      early.push(data);
      return;
    }
    forward(data);
  });
  const forward = (data: Buffer): void => {
    const s = stream;
    if (!s) return;
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
  try {
    stream = await open(ac.signal);
  } catch (err) {
    await finish(ws, statusOf(err));
    o.signal.removeEventListener("abort", leave);
    return;
  }
  o.log.debug({ pod, attach: q.attach, stdin: q.stdin, tty: q.tty }, "stream session open");
  for (const d of early.splice(0)) forward(d);
  const s = stream;
  let final: Status | undefined;
  try {
    for await (const ev of s.events()) {
      if (ev.kind === "data") {
        if ((ev.channel === Channel.Stdout && q.stdout) || (ev.channel === Channel.Stderr && (q.stderr || q.tty))) {
          await sendFrame(ws, ev.channel, ev.data);
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
  o.signal.removeEventListener("abort", leave);
  o.log.debug({ pod, status: final?.status, reason: final?.reason, why: s.why }, "stream session closed");
  await finish(ws, final);
}

const SUCCESS: Status = { ...unavailable("").status, status: "Success", code: 0, reason: "", message: "" };

/** One channel message, resolved once written (back-pressure towards the agent). */
function sendFrame(ws: WebSocket, channel: number, data: Uint8Array): Promise<void> {
  if (ws.readyState !== ws.OPEN) return Promise.resolve();
  const frame = Buffer.allocUnsafe(data.length + 1);
  frame[0] = channel;
  frame.set(data, 1);
  return new Promise((resolve) => ws.send(frame, { binary: true }, () => resolve()));
}

/** The error channel's last word (a Status), then a normal close: kubectl reads it and exits with the code it carries. */
async function finish(ws: WebSocket, status: Status | undefined): Promise<void> {
  if (status && ws.readyState === ws.OPEN) {
    const body = status.status === "Success" ? { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success" } : statusToKubeJson(status);
    await sendFrame(ws, Channel.Error, Buffer.from(JSON.stringify(body)));
  }
  if (ws.readyState === ws.OPEN) ws.close(1000);
}
