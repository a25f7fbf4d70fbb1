import type { NatsConnection } from "@nats-io/transport-node";
import { badRequest, unwrap } from "@choreo/kit";
import { agentExecSubject, agentPortForwardSubject, openBusStream, type BusStream, type BusStreamOptions } from "@choreo/kit/bus";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { PodExecRequest, PodPortForwardRequest } from "@choreo/kit/gen/choreo/node/v1/exec";
import type { ApiHandlers } from "../../handlers/api-handlers.js";
import { resolvePodLogTarget, type PodLogTarget } from "../../logs/index.js";

/** What pods/exec and pods/attach ask (the parsed query). */
export interface PodStreamQuery {
  namespace: string;
  name: string;
  container?: string;
  /** The command and its arguments (exec; empty for attach). */
  command: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
  attach: boolean;
}

/** Where a stream goes: the pod's node, its uid, the (defaulted) container. */
export type PodStreamTarget = PodLogTarget;

/** Opens streams into pods: the gateway's seam (a fake in unit tests, the bus in the api). */
export interface PodStreams {
  /** Checks the request against the pod as the kube-apiserver does (404, 400) before any upgrade. */
  resolve(q: PodStreamQuery): Promise<PodStreamTarget>;
  /** Asks the node's agent to open the session; resolves with the connected stream or throws the agent's Status. */
  open(q: PodStreamQuery, target: PodStreamTarget, signal: AbortSignal): Promise<BusStream>;
  /** pods/portforward: the pod exists and has a node (404, 400 before any upgrade). */
  resolveForward(q: PodForwardQuery): Promise<PodForwardTarget>;
  /** One forwarded connection: the agent connected to `port` on the pod; throws its Status (refused, unreachable) when it could not. */
  openForward(q: PodForwardQuery, target: PodForwardTarget, port: number, signal: AbortSignal): Promise<BusStream>;
}

/** The pod a port-forward reaches. */
export interface PodForwardQuery {
  namespace: string;
  name: string;
}

/** Where forwarded connections go: the pod's node and uid. */
export interface PodForwardTarget {
  node: string;
  uid: string;
}

/** Options of {@link NatsPodStreams}. */
export interface NatsPodStreamsOptions {
  nc: NatsConnection;
  handlers: Pick<ApiHandlers, "get">;
  /** How long the node agent has to accept the request (default 5 s). */
  requestTimeoutMs?: number;
  /** Heartbeat, idle timeout and window (defaults: bus-stream.ts). */
  stream?: Pick<BusStreamOptions, "heartbeatMs" | "idleTimeoutMs" | "window">;
}

/**
 * Streams into pods over the bus: `choreo.agent.<node>.exec` with a
 * PodExecRequest naming this side's inbox; the agent acks with its own
 * (protocol: services/node-agent/src/streams/README.md).
 */
export class NatsPodStreams implements PodStreams {
  constructor(private readonly opts: NatsPodStreamsOptions) {}

  async resolve(q: PodStreamQuery): Promise<PodStreamTarget> {
    if (!q.stdin && !q.stdout && !q.stderr) throw badRequest("you must specify at least 1 of stdin, stdout, stderr");
    if (!q.attach && q.command.length === 0) throw badRequest("you must specify at least one command for the container");
    if (q.tty && q.stderr) throw badRequest("stdout and stderr cannot both be requested with a tty (pass stderr=false)");
    const pod = unwrap(await this.opts.handlers.get({ resource: "pods", namespace: q.namespace, name: q.name })) as Pod;
    const phase = pod.status?.phase ?? "";
    if (phase === "Succeeded" || phase === "Failed") {
      throw badRequest(`cannot ${q.attach ? "attach to" : "exec into"} a container in a completed pod; current phase is ${phase}`);
    }
    return resolvePodLogTarget(this.opts.handlers, { namespace: q.namespace, name: q.name, ...(q.container ? { container: q.container } : {}) });
  }

  async open(q: PodStreamQuery, target: PodStreamTarget, signal: AbortSignal): Promise<BusStream> {
    return this.request(agentExecSubject(target.node), target.node, signal, (inbox) =>
      PodExecRequest.encode({
        namespace: q.namespace,
        name: q.name,
        uid: target.uid,
        container: target.container,
        command: q.command,
        stdin: q.stdin,
        stdout: q.stdout,
        stderr: q.stderr,
        tty: q.tty,
        attach: q.attach,
        inbox,
      }).finish(),
    );
  }

  async resolveForward(q: PodForwardQuery): Promise<PodForwardTarget> {
    const pod = unwrap(await this.opts.handlers.get({ resource: "pods", namespace: q.namespace, name: q.name })) as Pod;
    const node = pod.spec?.nodeName ?? "";
    if (!node) throw badRequest(`pod ${q.name} does not have a host assigned`);
    const phase = pod.status?.phase ?? "";
    if (phase === "Succeeded" || phase === "Failed") throw badRequest(`cannot forward ports of a completed pod; current phase is ${phase}`);
    return { node, uid: pod.metadata?.uid ?? "" };
  }

  openForward(q: PodForwardQuery, target: PodForwardTarget, port: number, signal: AbortSignal): Promise<BusStream> {
    return this.request(agentPortForwardSubject(target.node), target.node, signal, (inbox) =>
      PodPortForwardRequest.encode({ namespace: q.namespace, name: q.name, uid: target.uid, port, inbox }).finish(),
    );
  }

  /** Opens a bus stream to the node's agent (kit openBusStream: its errors, a 503 when no agent answers). */
  private request(subject: string, node: string, signal: AbortSignal, encode: (inbox: string) => Uint8Array): Promise<BusStream> {
    return openBusStream(this.opts.nc, subject, encode, {
      ...this.opts.stream,
      signal,
      peer: `node agent for node ${node}`,
      ...(this.opts.requestTimeoutMs !== undefined ? { timeoutMs: this.opts.requestTimeoutMs } : {}),
    });
  }
}
