// The gateway's upgrades, bridged onto bus streams to the pod's node agent:
// pods/exec and pods/attach over a WebSocket (v5.channel.k8s.io /
// v4.channel.k8s.io) or SPDY/3.1 (v4.channel.k8s.io); pods/portforward over
// SPDY/3.1, raw or tunnelled in a WebSocket. Protocol notes: ./README.md.
import { setMaxListeners } from "node:events";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { badRequest, methodNotAllowed, statusOf, type Status } from "@choreo/kit";
import type { BusStream } from "@choreo/kit/bus";
import type { Logger } from "@choreo/kit/log";
import { statusToKubeJson } from "@choreo/kit/kube-json";
import { createWebSocketStream, WebSocketServer } from "ws";
import { flag } from "../context.js";
import { codeOf } from "../respond.js";
import { parseRoute, type ResourceRoute } from "../routes.js";
import type { PodForwardQuery, PodForwardTarget, PodStreamQuery, PodStreams } from "./pod-streams.js";
import {
  forwardPorts,
  PORT_FORWARD_CHANNEL_PROTOCOL,
  PORT_FORWARD_PROTOCOL,
  PORT_FORWARD_TUNNEL_PROTOCOL,
  serveChannelPortForward,
  servePortForward,
} from "./port-forward.js";
import { runExecSession, serveSpdyExec, SPDY_CHANNEL_PROTOCOL, webSocketPeer } from "./exec-session.js";

/** The channel subprotocols served, preferred first (v5 adds the close channel, 255). */
export const CHANNEL_PROTOCOLS = ["v5.channel.k8s.io", "v4.channel.k8s.io"] as const;

export { Channel } from "./exec-session.js";

/** The subresources streamed over an upgrade. */
export const STREAM_SUBRESOURCES = ["exec", "attach", "portforward"] as const;

/** Options of {@link upgradeHandler}. */
export interface UpgradeOptions {
  streams: PodStreams | undefined;
  log: Logger;
  /** The gateway's authentication and authorization (`create pods/exec` …): throws 401 or 403. */
  admit(req: IncomingMessage, url: URL): unknown;
  /** Aborts every open session (the gateway closes). */
  signal: AbortSignal;
  /** Forwarded connections opened (+1) and closed (-1), for a gauge. */
  onForwardedConnections?: (delta: number) => void;
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
  // Port-forward's SPDY tunnelled in binary messages: each message is a slice of the SPDY byte stream.
  const tunnels = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: 16 * 1024 * 1024,
    handleProtocols: (offered) =>
      offered.has(PORT_FORWARD_TUNNEL_PROTOCOL)
        ? PORT_FORWARD_TUNNEL_PROTOCOL
        : offered.has(PORT_FORWARD_CHANNEL_PROTOCOL)
          ? PORT_FORWARD_CHANNEL_PROTOCOL
          : false,
  });
  return (req, socket, head) => {
    socket.on("error", () => undefined);
    let url: URL;
    try {
      url = new URL(req.url ?? "/", "http://gateway");
    } catch {
      url = new URL("http://gateway/");
    }
    const pf = isPortForward(url);
    const ready = pf
      ? preparePortForward(o, req, url).then((p) => {
          const ctx = { ...p, log: o.log, signal: o.signal, ...(o.onForwardedConnections ? { onConnections: o.onForwardedConnections } : {}) };
          if (p.transport === "websocket") {
            tunnels.handleUpgrade(req, socket, head, (ws) => void servePortForward(createWebSocketStream(ws), ctx));
          } else if (p.transport === "channels") {
            tunnels.handleUpgrade(req, socket, head, (ws) => void serveChannelPortForward(ws, p.ports, ctx));
          } else {
            socket.write(switchingProtocols("SPDY/3.1", PORT_FORWARD_PROTOCOL));
            if (head.length > 0) socket.unshift(head);
            void servePortForward(socket, ctx);
          }
        })
      : prepare(o, req, url).then(({ q, open, transport }) => {
          if (transport === "websocket") {
            wss.handleUpgrade(req, socket, head, (ws) => void runExecSession(o, webSocketPeer(ws), q, open));
          } else {
            socket.write(switchingProtocols("SPDY/3.1", SPDY_CHANNEL_PROTOCOL));
            if (head.length > 0) socket.unshift(head);
            void serveSpdyExec(socket, o, q, open);
          }
        });
    void ready.catch((err: unknown) => {
      const status = statusOf(err);
      const code = codeOf(status);
      if (code >= 500) o.log.warn({ err, path: url.pathname }, "stream upgrade failed");
      else o.log.debug({ path: url.pathname, code, message: status.message }, "stream upgrade refused");
      refuse(socket, { ...status, code });
    });
  };
}

/** The route of a streamed subresource, authenticated (401), or the 400/405 saying what is served. */
async function streamRoute(o: UpgradeOptions, req: IncomingMessage, url: URL): Promise<ResourceRoute & { subresource: (typeof STREAM_SUBRESOURCES)[number] }> {
  await o.admit(req, url);
  const route = parseRoute(url.pathname);
  if (route.type !== "resource" || route.info.resource !== "pods" || !isStreamSubresource(route.subresource)) {
    throw badRequest(`only pods/exec, pods/attach and pods/portforward are served over an upgrade, not ${url.pathname}`);
  }
  if (req.method !== "GET" && req.method !== "POST") throw methodNotAllowed(`${req.method ?? ""} is not supported on pods/${route.subresource}`);
  return { ...route, subresource: route.subresource };
}

function isPortForward(url: URL): boolean {
  return /\/pods\/[^/]+\/portforward\/?$/.test(url.pathname);
}

/** pods/portforward: the pod and the transport checked before the upgrade (raw SPDY/3.1, or SPDY tunnelled in a WebSocket). */
async function preparePortForward(
  o: UpgradeOptions,
  req: IncomingMessage,
  url: URL,
): Promise<{ transport: "websocket" | "channels" | "spdy"; q: PodForwardQuery; target: PodForwardTarget; streams: PodStreams; ports: number[] }> {
  const route = await streamRoute(o, req, url);
  if (!o.streams) throw badRequest("pods/portforward is not served by this api (no node agents to reach)");
  const q = { namespace: route.namespace, name: route.name };
  const target = await o.streams.resolveForward(q);
  const upgrade = String(req.headers.upgrade ?? "").toLowerCase();
  if (upgrade === "websocket") {
    const offered = offeredProtocols(req.headers["sec-websocket-protocol"]);
    if (offered.includes(PORT_FORWARD_TUNNEL_PROTOCOL)) return { transport: "websocket", q, target, streams: o.streams, ports: [] };
    if (offered.includes(PORT_FORWARD_CHANNEL_PROTOCOL)) return { transport: "channels", q, target, streams: o.streams, ports: forwardPorts(url) };
    throw badRequest(
      `pods/portforward over a WebSocket speaks ${PORT_FORWARD_TUNNEL_PROTOCOL} (kubectl 1.31 or later) or ${PORT_FORWARD_CHANNEL_PROTOCOL} (client libraries); the client offered ${offered.filter(Boolean).join(", ") || "none"}`,
    );
  }
  if (upgrade === "spdy/3.1") {
    const versions = offeredProtocols(req.headers["x-stream-protocol-version"]);
    if (!versions.includes(PORT_FORWARD_PROTOCOL)) {
      throw badRequest(`pods/portforward over SPDY/3.1 speaks ${PORT_FORWARD_PROTOCOL}; the client offered ${versions.filter(Boolean).join(", ") || "none"}`);
    }
    return { transport: "spdy", q, target, streams: o.streams, ports: [] };
  }
  throw badRequest(`pods/portforward needs an upgrade to SPDY/3.1 or to a WebSocket (${PORT_FORWARD_TUNNEL_PROTOCOL}), not ${req.headers.upgrade ?? "none"}`);
}

/** A header's comma-separated (or repeated) values. */
function offeredProtocols(header: string | string[] | undefined): string[] {
  return (Array.isArray(header) ? header.join(",") : String(header ?? "")).split(",").map((s) => s.trim());
}

/** The 101 of a raw upgrade (SPDY), naming the chosen stream protocol as Kubernetes does. */
function switchingProtocols(upgrade: string, protocol: string): string {
  return `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${upgrade}\r\nX-Stream-Protocol-Version: ${protocol}\r\n\r\n`;
}

/** Everything checked before the upgrade (so errors are HTTP Status responses, as Kubernetes answers them). */
async function prepare(
  o: UpgradeOptions,
  req: IncomingMessage,
  url: URL,
): Promise<{ q: PodStreamQuery; open: (signal: AbortSignal) => Promise<BusStream>; transport: "websocket" | "spdy" }> {
  const route = await streamRoute(o, req, url);
  const q = queryOf(route, url);
  if (!o.streams) throw badRequest(`pods/${route.subresource} is not served by this api (no node agents to reach)`);
  const streams = o.streams;
  const target = await streams.resolve(q);
  const open = (signal: AbortSignal): Promise<BusStream> => streams.open(q, target, signal);
  const upgrade = String(req.headers.upgrade ?? "").toLowerCase();
  if (upgrade === "spdy/3.1") {
    const versions = offeredProtocols(req.headers["x-stream-protocol-version"]);
    if (!versions.includes(SPDY_CHANNEL_PROTOCOL)) {
      throw badRequest(
        `pods/${route.subresource} over SPDY/3.1 speaks ${SPDY_CHANNEL_PROTOCOL}; the client offered ${versions.filter(Boolean).join(", ") || "none"}`,
      );
    }
    return { q, open, transport: "spdy" };
  }
  if (upgrade !== "websocket") {
    throw badRequest(
      `pods/${route.subresource} needs an upgrade to a WebSocket (${CHANNEL_PROTOCOLS.join(", ")}) or to SPDY/3.1 (${SPDY_CHANNEL_PROTOCOL}), not ${req.headers.upgrade ?? "none"}`,
    );
  }
  const offered = offeredProtocols(req.headers["sec-websocket-protocol"]);
  if (!CHANNEL_PROTOCOLS.some((p) => offered.includes(p))) {
    throw badRequest(
      `pods/${route.subresource} speaks the WebSocket subprotocols ${CHANNEL_PROTOCOLS.join(", ")}; the client offered ${offered.filter(Boolean).join(", ") || "none"}`,
    );
  }
  return { q, open, transport: "websocket" };
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
