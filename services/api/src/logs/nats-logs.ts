import type { NatsConnection } from "@nats-io/transport-node";
import { ApiError, badRequest, unavailable } from "@choreo/kit";
import { agentLogsSubject, LOG_CHANNEL, openBusStream, type BusStreamOptions } from "@choreo/kit/bus";
import type { Logger } from "@choreo/kit/log";
import { PodLogRequest } from "@choreo/kit/gen/choreo/node/v1/logs";
import type { ApiHandlers, LogsHandler } from "../handlers/api-handlers.js";
import { resolvePodLogTarget } from "./pod-log-target.js";

/** What `GET pods/NAME/log` asks (the gateway's parsed query). */
export type PodLogQuery = Parameters<LogsHandler["logs"]>[0];

/** Options of {@link NatsLogs}. */
export interface NatsLogsOptions {
  nc: NatsConnection;
  /** Where pods are read. */
  handlers: Pick<ApiHandlers, "get">;
  log: Logger;
  /** How long the node agent has to accept the request (default 5 s). */
  requestTimeoutMs?: number;
  /**
   * Heartbeat period, idle timeout (a stream whose agent went silent this
   * long ends with a 503) and window (defaults: kit bus/bus-stream.ts).
   */
  stream?: Pick<BusStreamOptions, "heartbeatMs" | "idleTimeoutMs" | "window">;
}

/**
 * The api's `LogsHandler`: resolves the pod and container, opens a bus
 * stream to the agent of the pod's node on `choreo.agent.<node>.logs` and
 * relays the log bytes it sends on channel {@link LOG_CHANNEL} (protocol:
 * services/node-agent/src/logs/README.md). Credit flows back as the HTTP
 * client takes chunks; the stream is aborted when the HTTP client leaves.
 */
export class NatsLogs implements LogsHandler {
  private readonly log: Logger;

  constructor(private readonly opts: NatsLogsOptions) {
    this.log = opts.log;
  }

  async *logs(req: PodLogQuery, signal: AbortSignal): AsyncIterable<string> {
    if (req.tailLines !== undefined && req.tailLines < 0) throw badRequest(`tailLines must be greater than or equal to 0, not ${req.tailLines}`);
    if (req.sinceSeconds !== undefined && req.sinceSeconds < 1) throw badRequest(`sinceSeconds must be greater than 0, not ${req.sinceSeconds}`);
    const target = await resolvePodLogTarget(this.opts.handlers, req);
    const peer = `node agent for node ${target.node}`;
    const stream = await openBusStream(
      this.opts.nc,
      agentLogsSubject(target.node),
      (inbox) =>
        PodLogRequest.encode({
          inbox,
          options: {
            namespace: req.namespace,
            name: req.name,
            uid: target.uid,
            container: target.container,
            follow: req.follow,
            timestamps: req.timestamps,
            previous: req.previous,
            tailLines: req.tailLines,
            sinceSeconds: req.sinceSeconds,
          },
        }).finish(),
      { ...this.opts.stream, peer, signal, ...(this.opts.requestTimeoutMs !== undefined ? { timeoutMs: this.opts.requestTimeoutMs } : {}) },
    );
    let frames = 0;
    let finished = false;
    try {
      // Sends the headers now, as Kubernetes does: a follower may wait long for its first line.
      if (req.follow) yield "";
      const text = new TextDecoder();
      for await (const ev of stream.events()) {
        if (ev.kind === "data" && ev.channel === LOG_CHANNEL) {
          frames++;
          const s = text.decode(ev.data, { stream: true });
          if (s) yield s;
        } else if (ev.kind === "end") {
          finished = true;
          if (ev.status) throw new ApiError(ev.status);
          const rest = text.decode();
          if (rest) yield rest;
          return;
        }
      }
      // The HTTP client left (`signal`): nobody reads what would follow.
      if (signal.aborted) return;
      if (stream.why === "aborted" && stream.abortStatus) throw new ApiError(stream.abortStatus);
      throw unavailable(`${peer} stopped answering`);
    } finally {
      // Tells the agent to stop reading, unless the log ended (a no-op when the stream already stopped).
      if (!finished) stream.abort();
      stream.close();
      this.log.debug(
        { pod: `${req.namespace}/${req.name}`, container: target.container, node: target.node, frames, finished, why: stream.why },
        "log stream closed",
      );
    }
  }
}
