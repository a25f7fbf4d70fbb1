import { createInbox, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { badRequest, internal, unavailable } from "@choreo/kit";
import {
  agentLogsSubject,
  decodeLogError,
  LOG_HEARTBEAT_MS,
  LOG_IDLE_TIMEOUT_MS,
  LOG_WINDOW,
  logCancelSubject,
  LogFrame,
  logFrameOf,
  logHeartbeatSubject,
} from "@choreo/kit/bus";
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
  /** Heartbeat period (default {@link LOG_HEARTBEAT_MS}). */
  heartbeatMs?: number;
  /** A stream whose agent went silent this long ends with a 503 (default {@link LOG_IDLE_TIMEOUT_MS}). */
  idleTimeoutMs?: number;
}

/**
 * The api's `LogsHandler`: resolves the pod and container, asks the agent of
 * the pod's node on `choreo.agent.<node>.logs` and relays the frames it
 * streams to a fresh inbox (protocol: services/node-agent/src/logs/README.md).
 * Reports progress on `<inbox>.hb` (the agent's credit and liveness) and
 * sends `<inbox>.cancel` when the HTTP client leaves.
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
    const { nc } = this.opts;
    const inbox = createInbox();
    const sub = nc.subscribe(inbox);
    const heartbeatMs = this.opts.heartbeatMs ?? LOG_HEARTBEAT_MS;
    const idleTimeoutMs = this.opts.idleTimeoutMs ?? LOG_IDLE_TIMEOUT_MS;
    let consumed = 0;
    let reported = 0;
    let lastHeard = Date.now();
    let idle = false;
    // While the HTTP client is slow to take a chunk the agent waits for credit: that silence is ours.
    let yielded = false;
    let finished = false;
    const send = (subject: string, data?: string): void => {
      try {
        if (!nc.isClosed()) nc.publish(subject, data);
      } catch {
        // The connection is draining (shutdown): the agent notices the silence.
      }
    };
    const report = (): void => {
      reported = consumed;
      send(logHeartbeatSubject(inbox), String(consumed));
    };
    const stop = (): void => sub.unsubscribe();
    const timer = setInterval(() => {
      if (!yielded && Date.now() - lastHeard > idleTimeoutMs) {
        idle = true;
        stop();
      } else report();
    }, heartbeatMs);
    timer.unref();
    if (signal.aborted) stop();
    else signal.addEventListener("abort", stop, { once: true });
    try {
      await this.request(
        target.node,
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
      );
      // Sends the headers now, as Kubernetes does: a follower may wait long for its first line.
      if (req.follow) yield "";
      const text = new TextDecoder();
      for await (const m of sub) {
        lastHeard = Date.now();
        const kind = logFrameOf(m);
        if (kind === LogFrame.Data) {
          const s = text.decode(m.data, { stream: true });
          if (s) {
            yielded = true;
            yield s;
            yielded = false;
            lastHeard = Date.now();
          }
          consumed++;
          if (consumed - reported >= LOG_WINDOW / 2) report();
        } else if (kind === LogFrame.End) {
          finished = true;
          const rest = text.decode();
          if (rest) yield rest;
          return;
        } else if (kind === LogFrame.Error) {
          finished = true;
          throw decodeLogError(m.data);
        }
      }
      if (idle) throw unavailable(`node agent for node ${target.node} stopped answering`);
    } finally {
      clearInterval(timer);
      signal.removeEventListener("abort", stop);
      stop();
      if (!finished) send(logCancelSubject(inbox));
      this.log.debug({ pod: `${req.namespace}/${req.name}`, container: target.container, node: target.node, frames: consumed, finished }, "log stream closed");
    }
  }

  /** Sends the request to the node's agent; throws the Status it answers with. */
  private async request(node: string, data: Uint8Array): Promise<void> {
    let reply: Msg;
    try {
      reply = await this.opts.nc.request(agentLogsSubject(node), data, { timeout: this.opts.requestTimeoutMs ?? 5_000 });
    } catch {
      // No responders or no answer in time: the agent is down, or the node has none.
      throw unavailable(`node agent for node ${node} is not answering`);
    }
    const kind = logFrameOf(reply);
    if (kind === LogFrame.Error) throw decodeLogError(reply.data);
    if (kind !== LogFrame.Ack) throw internal(`node agent for node ${node} sent an unexpected reply`);
  }
}
