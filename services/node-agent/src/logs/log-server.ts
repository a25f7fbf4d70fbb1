import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { ApiError, badRequest, failure, notFound, statusOf, unavailable, type Status } from "@choreo/kit";
import { agentLogsSubject, LOG_CHANNEL, type BusStreamOptions } from "@choreo/kit/bus";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { PodLogRequest } from "@choreo/kit/gen/choreo/node/v1/logs";
import { RuntimeRequestError, type LogOptions, type Runtime } from "../runtime/runtime.js";
import { acceptStream, replyStreamError, serveRequests } from "../streams/serve-requests.js";

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
  /**
   * Heartbeat period, idle timeout (a stream whose api stopped reporting
   * this long is stopped) and window (data frames in flight before waiting
   * for the api's credit); defaults: kit bus/bus-stream.ts.
   */
  stream?: Pick<BusStreamOptions, "heartbeatMs" | "idleTimeoutMs" | "window">;
}

/**
 * Answers the api's log requests for one node: reads the container log from
 * the runtime and sends it on channel {@link LOG_CHANNEL} of a bus stream to
 * the api's inbox, then ends the stream (protocol: ./README.md). Errors the
 * runtime raises before the first chunk become the reply (a
 * RuntimeRequestError is a 400 BadRequest); later ones, and the agent's
 * stop, end the stream with a Status.
 */
export class LogServer implements Runnable {
  readonly name: string;
  private readonly log: Logger;

  constructor(private readonly opts: LogServerOptions) {
    this.name = `log-server-${opts.node}`;
    this.log = opts.log.child({ subsystem: "logs", node: opts.node });
  }

  start(outer: AbortSignal): Promise<void> {
    return serveRequests(this.opts.nc, agentLogsSubject(this.opts.node), outer, this.log, (msg, signal) => this.serve(msg, signal));
  }

  /** One request: validate, open the runtime's log, accept (or refuse), then stream. */
  private async serve(msg: Msg, signal: AbortSignal): Promise<void> {
    let req: PodLogRequest;
    try {
      req = PodLogRequest.decode(msg.data);
    } catch {
      replyStreamError(msg, badRequest("undecodable log request").status);
      return;
    }
    const o = req.options;
    if (!o || !req.inbox || !o.container || !o.uid) {
      replyStreamError(msg, badRequest("a log request needs a pod uid, a container and an inbox").status);
      return;
    }
    const cached = this.opts.pods.get(`${o.namespace}/${o.name}`);
    if (cached && cached.metadata?.uid !== o.uid) {
      replyStreamError(msg, notFound("pods", o.name).status);
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
    const pod = `${o.namespace}/${o.name}`;
    // The runtime's reading stops with the stream, or before it opened when the request is refused.
    const reading = new AbortController();
    let it: AsyncIterator<Uint8Array> | undefined;
    try {
      it = this.opts.runtime.logs(o.uid, opts, reading.signal)[Symbol.asyncIterator]();
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
        replyStreamError(msg, logStatus(early.err));
        return;
      }
      if (signal.aborted) {
        replyStreamError(msg, stopping(this.opts.node));
        return;
      }
      const stream = acceptStream(msg, { ...this.opts.stream, nc: this.opts.nc, remote: req.inbox });
      // The agent stops: the api hears why, and a send waiting for credit gives up.
      const onStop = (): void => {
        stream.end(stopping(this.opts.node));
        stream.close();
      };
      signal.addEventListener("abort", onStop, { once: true });
      stream.signal.addEventListener("abort", () => reading.abort(), { once: true });
      this.log.debug({ pod, container: o.container, follow: o.follow }, "log stream started");
      try {
        for (let r = early ? early.r : await first; !r.done; r = await it.next()) {
          if (!(await stream.send(LOG_CHANNEL, r.value))) break;
        }
        stream.end();
      } catch (err) {
        // A no-op once the stream stopped (the api left, or the agent stops).
        stream.end(logStatus(err));
      } finally {
        signal.removeEventListener("abort", onStop);
        stream.close();
      }
      this.log.debug({ pod, container: o.container, why: stream.why }, "log stream ended");
    } catch (err) {
      replyStreamError(msg, logStatus(err));
    } finally {
      reading.abort();
      // Not awaited: a runtime slow to notice its aborted signal must not hold the agent's shutdown.
      it?.return?.(undefined).catch(() => undefined);
    }
  }
}

/** The Status a stream is ended with when its agent stops. */
function stopping(node: string): Status {
  return unavailable(`node agent for node ${node} is stopping`).status;
}
/** The Status a runtime failure is reported with. */
export function logStatus(err: unknown): Status {
  if (err instanceof RuntimeRequestError || (err instanceof Error && err.name === "RuntimeRequestError")) return badRequest(err.message).status;
  if (err instanceof ApiError) return err.status;
  const s = statusOf(err);
  return s.code ? s : failure(500, "InternalError", "Internal error occurred: log stream failed");
}
