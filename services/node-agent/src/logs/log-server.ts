import { setMaxListeners } from "node:events";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { ApiError, badRequest, failure, notFound, statusOf, unavailable, type Status } from "@choreo/kit";
import { agentLogsSubject, encodeLogError, LOG_HEARTBEAT_MS, LOG_IDLE_TIMEOUT_MS, LogFrame, logFrameHeaders, LOG_WINDOW } from "@choreo/kit/bus";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { PodLogRequest } from "@choreo/kit/gen/choreo/node/v1/logs";
import { RuntimeRequestError, type LogOptions, type Runtime } from "../runtime/runtime.js";
import { LogStream } from "./log-stream.js";

/** Options of {@link LogServer}. */
export interface LogServerOptions {
  nc: NatsConnection;
  /** The node whose `choreo.agent.<node>.logs` requests this server answers. */
  node: string;
  runtime: Pick<Runtime, "logs">;
  /** The agent's pod cache, by `namespace/name`: a request for another incarnation of a pod is refused. */
  pods: { get(key: string): Pod | undefined };
  log: Logger;
  /** How long the first chunk may take before the reply is an ack without it (default 300 ms). */
  ackWindowMs?: number;
  /** Heartbeat period (default {@link LOG_HEARTBEAT_MS}). */
  heartbeatMs?: number;
  /** A stream whose api stopped reporting for this long is stopped (default {@link LOG_IDLE_TIMEOUT_MS}). */
  idleTimeoutMs?: number;
  /** Data frames in flight before waiting for the api's progress report (default {@link LOG_WINDOW}). */
  window?: number;
}

/**
 * Answers the api's log requests for one node: reads the container log from
 * the runtime and streams it to the api's inbox (protocol: ./README.md).
 * Errors the runtime raises before the first chunk become the reply (a
 * RuntimeRequestError is a 400 BadRequest); later ones end the stream with
 * an error frame.
 */
export class LogServer implements Runnable {
  readonly name: string;
  private readonly log: Logger;

  constructor(private readonly opts: LogServerOptions) {
    this.name = `log-server-${opts.node}`;
    this.log = opts.log.child({ subsystem: "logs", node: opts.node });
  }

  async start(outer: AbortSignal): Promise<void> {
    const sub = this.opts.nc.subscribe(agentLogsSubject(this.opts.node));
    // Every open stream listens to this one signal: no listener limit.
    const ac = new AbortController();
    setMaxListeners(0, ac.signal);
    const signal = ac.signal;
    const stop = (): void => {
      sub.unsubscribe();
      ac.abort();
    };
    if (outer.aborted) stop();
    outer.addEventListener("abort", stop, { once: true });
    this.log.info({ subject: sub.getSubject() }, "log server listening");
    const open = new Set<Promise<void>>();
    for await (const msg of sub) {
      const p = this.serve(msg, signal).catch((err: unknown) => this.log.warn({ err }, "log request failed"));
      open.add(p);
      void p.finally(() => open.delete(p));
    }
    await Promise.allSettled([...open]);
    outer.removeEventListener("abort", stop);
  }

  /** One request: validate, open the runtime's log, reply, then stream. */
  private async serve(msg: Msg, signal: AbortSignal): Promise<void> {
    let req: PodLogRequest;
    try {
      req = PodLogRequest.decode(msg.data);
    } catch {
      this.replyError(msg, badRequest("undecodable log request").status);
      return;
    }
    const o = req.options;
    if (!o || !req.inbox || !o.container || !o.uid) {
      this.replyError(msg, badRequest("a log request needs a pod uid, a container and an inbox").status);
      return;
    }
    const cached = this.opts.pods.get(`${o.namespace}/${o.name}`);
    if (cached && cached.metadata?.uid !== o.uid) {
      this.replyError(msg, notFound("pods", o.name).status);
      return;
    }
    const opts: LogOptions = {
      container: o.container,
      follow: o.follow,
      timestamps: o.timestamps,
      previous: o.previous,
      ...(o.tailLines !== undefined ? { tailLines: o.tailLines } : {}),
      ...(o.sinceSeconds !== undefined ? { sinceSeconds: o.sinceSeconds } : {}),
    };
    const stream = new LogStream({
      nc: this.opts.nc,
      inbox: req.inbox,
      signal,
      heartbeatMs: this.opts.heartbeatMs ?? LOG_HEARTBEAT_MS,
      idleTimeoutMs: this.opts.idleTimeoutMs ?? LOG_IDLE_TIMEOUT_MS,
      window: this.opts.window ?? LOG_WINDOW,
    });
    const pod = `${o.namespace}/${o.name}`;
    try {
      const it = this.opts.runtime.logs(o.uid, opts, stream.signal)[Symbol.asyncIterator]();
      const first = it.next();
      // Errors of a runtime's async generator surface at the first next():
      // wait a moment for it so that they become the reply, not a broken stream.
      const early = await Promise.race([
        first.then(
          (r) => ({ r }),
          (err: unknown) => ({ err }),
        ),
        new Promise<undefined>((r) => setTimeout(() => r(undefined), this.opts.ackWindowMs ?? 300).unref()),
      ]);
      if (early && "err" in early) {
        this.replyError(msg, logStatus(early.err));
        return;
      }
      msg.respond(new Uint8Array(), { headers: logFrameHeaders(LogFrame.Ack) });
      this.log.debug({ pod, container: o.container, follow: o.follow }, "log stream started");
      try {
        for (let r = early ? early.r : await first; !r.done; r = await it.next()) {
          if (!(await stream.send(r.value))) break;
        }
        stream.end();
      } catch (err) {
        if (!stream.signal.aborted) stream.fail(logStatus(err));
      } finally {
        // Not awaited: a runtime slow to notice its aborted signal must not hold the agent's shutdown.
        it.return?.(undefined).catch(() => undefined);
      }
      if (signal.aborted) stream.fail(unavailable(`node agent for node ${this.opts.node} is stopping`).status);
      this.log.debug({ pod, container: o.container, why: stream.why }, "log stream ended");
    } catch (err) {
      this.replyError(msg, logStatus(err));
    } finally {
      stream.close();
    }
  }

  private replyError(msg: Msg, status: Status): void {
    msg.respond(encodeLogError(status), { headers: logFrameHeaders(LogFrame.Error) });
  }
}

/** The Status a runtime failure is reported with. */
export function logStatus(err: unknown): Status {
  if (err instanceof RuntimeRequestError || (err instanceof Error && err.name === "RuntimeRequestError")) return badRequest(err.message).status;
  if (err instanceof ApiError) return err.status;
  const s = statusOf(err);
  return s.code ? s : failure(500, "InternalError", "Internal error occurred: log stream failed");
}
