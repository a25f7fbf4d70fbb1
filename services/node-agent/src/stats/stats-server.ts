import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { agentSubject } from "@choreo/kit/bus";
import type { Runnable } from "@choreo/kit/lifecycle";
import { onAbort, sleep } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import { NodeStatsReply, NodeStatsRequest, type PodStats, type Usage } from "@choreo/kit/gen/choreo/node/v1/stats";
import type { NodeUsage, UsageSource } from "./node-stats.js";
import type { WindowUsage } from "./window.js";

/** The subject a node's agent answers stats requests on: `choreo.agent.<node>.stats`. */
export function agentStatsSubject(node: string): string {
  return agentSubject(node, "stats");
}

/** Options of {@link StatsServer}. */
export interface StatsServerOptions {
  nc: NatsConnection;
  node: string;
  source: UsageSource;
  log: Logger;
  /** How often the source takes a reading between requests (default 5 s; 0: only on requests, as hollow nodes). */
  sampleEveryMs?: number;
}

function usageOf(u: WindowUsage): Usage {
  return {
    cpuNanocores: Number(u.cpuNanocores),
    memoryWorkingSetBytes: Number(u.memoryBytes),
    timestamp: new Date(u.endMs).toISOString(),
    windowMs: u.windowMs,
  };
}

/** The reply to a stats request (pure): the node's usage, and its pods' when asked, grouped by pod. */
export function statsReply(node: string, req: NodeStatsRequest, u: NodeUsage): NodeStatsReply {
  const pods = new Map<string, PodStats>();
  if (req.pods) {
    for (const c of u.containers) {
      if (req.namespace && c.namespace !== req.namespace) continue;
      let p = pods.get(c.uid);
      if (!p) pods.set(c.uid, (p = { namespace: c.namespace, name: c.pod, uid: c.uid, containers: [] }));
      p.containers.push({ name: c.container, usage: usageOf(c.usage) });
    }
  }
  return { node, nodeUsage: u.node ? usageOf(u.node) : undefined, pods: [...pods.values()] };
}

/**
 * Answers the api's `choreo.agent.<node>.stats` requests with the node's
 * and its pods' usage (protocol: ./README.md), taking a fresh reading for
 * each so that the window ends now; between requests it reads every few
 * seconds so that a rate is always at hand.
 */
export class StatsServer implements Runnable {
  readonly name: string;
  private readonly log: Logger;

  constructor(private readonly o: StatsServerOptions) {
    this.name = `stats-server-${o.node}`;
    this.log = o.log.child({ subsystem: "stats", node: o.node });
  }

  async start(signal: AbortSignal): Promise<void> {
    const sub: Subscription = this.o.nc.subscribe(agentStatsSubject(this.o.node), { callback: (err, msg) => (err ? undefined : this.serve(msg)) });
    this.log.debug({ subject: agentStatsSubject(this.o.node) }, "stats server listening");
    const every = this.o.sampleEveryMs ?? 5_000;
    try {
      if (every > 0) {
        do this.read();
        while (await sleep(every, signal));
      } else {
        await new Promise<void>((resolve) => onAbort(signal, resolve));
      }
    } finally {
      sub.unsubscribe();
    }
  }

  private read(): void {
    try {
      this.o.source.sample();
    } catch (err) {
      this.log.warn({ err }, "usage reading failed");
    }
  }

  private serve(msg: Msg): void {
    let req: NodeStatsRequest;
    try {
      req = NodeStatsRequest.decode(msg.data);
    } catch {
      req = NodeStatsRequest.fromPartial({ pods: true });
    }
    this.read();
    msg.respond(NodeStatsReply.encode(statsReply(this.o.node, req, this.o.source.usage())).finish());
  }
}
