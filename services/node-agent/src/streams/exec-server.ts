import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { badRequest, failure, notFound, unavailable, type Status } from "@choreo/kit";
import { agentExecSubject, type BusStream, type BusStreamOptions } from "@choreo/kit/bus";
import { onAbort, type Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { PodExecRequest } from "@choreo/kit/gen/choreo/node/v1/exec";
import { logStatus } from "../logs/log-server.js";
import type { Runtime, StreamSession } from "../runtime/runtime.js";
import { acceptStream, replyStreamError, serveRequests } from "./serve-requests.js";

/** Kubernetes' remotecommand channels, used as they are on the bus. */
export const Channel = { Stdin: 0, Stdout: 1, Stderr: 2, Error: 3, Resize: 4 } as const;

/** Options of {@link ExecServer}. */
export interface ExecServerOptions {
  nc: NatsConnection;
  /** The node whose `choreo.agent.<node>.exec` requests this server answers. */
  node: string;
  runtime: Pick<Runtime, "name" | "execStream" | "attach">;
  /** The agent's pod cache, by `namespace/name`: a request for another incarnation of a pod is refused. */
  pods: { get(key: string): Pod | undefined };
  log: Logger;
  /** Heartbeat, idle timeout and window of the streams (defaults: bus-stream.ts). */
  stream?: Pick<BusStreamOptions, "heartbeatMs" | "idleTimeoutMs" | "window">;
}

/**
 * Answers the api's exec and attach requests for one node (protocol:
 * ./README.md): opens a session in the runtime, replies with an ack naming
 * its inbox, then pumps stdout/stderr to the api and stdin/resize from it,
 * each way under credit; ends with the exit as a Status. The session is
 * killed when the api goes away (abort or silence) or the agent stops.
 */
export class ExecServer implements Runnable {
  readonly name: string;
  private readonly log: Logger;

  constructor(private readonly opts: ExecServerOptions) {
    this.name = `exec-server-${opts.node}`;
    this.log = opts.log.child({ subsystem: "exec", node: opts.node });
  }

  start(outer: AbortSignal): Promise<void> {
    return serveRequests(this.opts.nc, agentExecSubject(this.opts.node), outer, this.log, (msg, signal) => this.serve(msg, signal));
  }

  /** One request: validate, open the session, reply, then stream both ways until the process ends or a side leaves. */
  private async serve(msg: Msg, signal: AbortSignal): Promise<void> {
    let req: PodExecRequest;
    try {
      req = PodExecRequest.decode(msg.data);
    } catch {
      this.replyError(msg, badRequest("undecodable exec request").status);
      return;
    }
    if (!req.inbox || !req.container || !req.uid || (!req.attach && req.command.length === 0)) {
      this.replyError(msg, badRequest("an exec request needs a pod uid, a container, a command and an inbox").status);
      return;
    }
    const cached = this.opts.pods.get(`${req.namespace}/${req.name}`);
    if (cached && cached.metadata?.uid !== req.uid) {
      this.replyError(msg, notFound("pods", req.name).status);
      return;
    }
    const { runtime } = this.opts;
    const how = { stdin: req.stdin, tty: req.tty };
    let session: StreamSession;
    try {
      if (req.attach) {
        if (!runtime.attach) throw badRequest(`the ${runtime.name} runtime of node ${this.opts.node} cannot attach to containers (it runs no processes)`);
        session = await runtime.attach(req.uid, req.container, how);
      } else {
        if (!runtime.execStream) throw badRequest(`the ${runtime.name} runtime of node ${this.opts.node} cannot exec into containers (it runs no processes)`);
        session = await runtime.execStream(req.uid, req.container, req.command, how);
      }
    } catch (err) {
      this.replyError(msg, logStatus(err));
      return;
    }
    const pod = `${req.namespace}/${req.name}`;
    // The agent's stop is told to the api with why (a 503), not as a bare abort: so no `signal` for the stream itself.
    const stream = acceptStream(msg, { ...this.opts.stream, nc: this.opts.nc, remote: req.inbox });
    const unlisten = onAbort(signal, () => stream.abort(unavailable(`node agent for node ${this.opts.node} is stopping`).status, "shutdown"));
    this.log.debug({ pod, container: req.container, attach: req.attach, stdin: req.stdin, tty: req.tty }, "exec stream started");
    const kill = (): void => session.kill();
    stream.signal.addEventListener("abort", kill, { once: true });
    const pumps = [pump(session.stdout, Channel.Stdout, stream), ...(session.stderr ? [pump(session.stderr, Channel.Stderr, stream)] : [])];
    const input = this.input(stream, session);
    try {
      await Promise.all(pumps);
      const code = await session.exit;
      if (!signal.aborted) stream.end(exitStatus(code, req.attach ? [] : req.command));
      this.log.debug({ pod, container: req.container, exitCode: code, why: stream.why }, "exec stream ended");
    } catch (err) {
      this.log.warn({ err, pod, container: req.container }, "exec stream failed");
      stream.abort(logStatus(err));
      session.kill();
    } finally {
      stream.signal.removeEventListener("abort", kill);
      unlisten();
      stream.close();
      await input;
    }
  }

  /** What the api sends: stdin bytes (written with back-pressure), stdin's close, terminal sizes. */
  private async input(stream: BusStream, session: StreamSession): Promise<void> {
    const stdin = session.stdin;
    try {
      for await (const ev of stream.events()) {
        if (ev.kind === "data" && ev.channel === Channel.Stdin && stdin) {
          if (!stdin.write(ev.data)) await new Promise<void>((resolve) => stdin.once("drain", resolve).once("close", resolve));
        } else if (ev.kind === "close" && ev.channel === Channel.Stdin) {
          stdin?.end();
        } else if (ev.kind === "data" && ev.channel === Channel.Resize) {
          const size = parseSize(ev.data);
          if (size) session.resize(size.width, size.height);
        } else if (ev.kind === "end") {
          // The api is done (its client closed everything): stdin ends, the process decides.
          stdin?.end();
        }
      }
    } catch (err) {
      this.log.debug({ err }, "exec input ended");
    }
  }

  private replyError(msg: Msg, status: Status): void {
    replyStreamError(msg, status);
  }
}

/** Sends a readable's chunks on a channel under credit; stops reading when the stream stopped. */
async function pump(from: NodeJS.ReadableStream, channel: number, stream: BusStream): Promise<void> {
  for await (const chunk of from) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    if (!(await stream.send(channel, bytes))) return;
  }
}

/** A terminal size from Kubernetes' resize message (`{"Width":80,"Height":24}`). */
export function parseSize(data: Uint8Array): { width: number; height: number } | undefined {
  try {
    const v = JSON.parse(new TextDecoder().decode(data)) as { Width?: unknown; Height?: unknown };
    const width = Number(v.Width);
    const height = Number(v.Height);
    if (!Number.isInteger(width) || !Number.isInteger(height) || width < 0 || height < 0 || width > 65535 || height > 65535) return undefined;
    return { width, height };
  } catch {
    return undefined;
  }
}

/** The Status an exec ends with: Success, or the kubelet's NonZeroExitCode carrying the code (kubectl exits with it). */
export function exitStatus(code: number, command: readonly string[]): Status {
  if (code === 0) return { ...failure(0, "", ""), status: "Success" };
  return failure(0, "NonZeroExitCode", `command terminated with non-zero exit code: command '${command.join(" ")}' exited with ${code}`, {
    causes: [{ reason: "ExitCode", message: String(code), field: "" }],
  });
}
