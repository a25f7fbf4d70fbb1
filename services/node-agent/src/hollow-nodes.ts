import { setMaxListeners } from "node:events";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Registry } from "prom-client";
import type { ApiClient } from "@choreo/kit/client";
import type { Runnable } from "@choreo/kit/lifecycle";
import { FailureLog, type Logger } from "@choreo/kit/log";
import { NodeAgent, type NodeAgentOptions } from "./agent.js";
import type { NodeConfig } from "./node.js";
import { HollowRuntime } from "./runtime/hollow.js";

/**
 * The pod CIDR of hollow node `index`: 10.128.<index>.0/24 onwards, /24 after
 * /24 inside 10.0.0.0/8 — outside the default cluster CIDR (10.244.0.0/16),
 * so hollow nodes' synthetic pod addresses never take a block the api's node
 * IPAM gives real nodes, and thousands of them fit.
 */
export function podCidrFor(index: number): string {
  const n = (128 * 256 + index) % 65_536;
  return `10.${n >> 8}.${n & 255}.0/24`;
}

/** The InternalIP of hollow node `index`, from 172.16.0.0/12. */
export function nodeIpFor(index: number): string {
  const n = (index + 1) % 2 ** 20;
  return `172.${16 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;
}

/** Options of {@link hollowNodes}. */
export interface HollowNodesOptions {
  count: number;
  /** Node names are `<prefix><index>` (default `hollow-`). */
  prefix?: string;
  /** The first index (so that several processes can share a prefix without clashing). */
  firstIndex?: number;
  client: ApiClient;
  nc: NatsConnection;
  jsm: JetStreamManager;
  log: Logger;
  /** How long a hollow pod takes to start (default 50 ms). */
  startDelayMs?: number;
  /** capacity = allocatable (defaults 4 cpu, 16Gi, 110 pods). */
  resources?: Partial<Pick<NodeConfig, "cpu" | "memory" | "pods">>;
  /** Passed to every agent. */
  agent?: Partial<
    Pick<
      NodeAgentOptions,
      | "leaseRenewMs"
      | "leaseDurationSeconds"
      | "statusCheckMs"
      | "statusReportMs"
      | "restartBackoff"
      | "workers"
      | "resyncMs"
      | "events"
      | "extras"
      | "stopPodsOnExit"
      | "configResyncMs"
    >
  >;
  registry?: Registry;
  /** Names the node instead of `<prefix><index>` (a single node: `--node-name`). */
  nodeName?: string;
  /** The agents' shared failure log (default one on `log` with a 30 s window). */
  failures?: FailureLog;
}

/** The config of hollow node `index`. */
export function hollowNodeConfig(index: number, prefix = "hollow-", resources: HollowNodesOptions["resources"] = {}, name?: string): NodeConfig {
  return {
    name: name ?? `${prefix}${index}`,
    podCidr: podCidrFor(index),
    internalIp: nodeIpFor(index),
    cpu: resources.cpu ?? "4",
    memory: resources.memory ?? "16Gi",
    pods: resources.pods ?? "110",
    labels: { "choreo.dev/runtime": "hollow" },
    runtimeVersion: "hollow://1",
  };
}

/**
 * Many hollow node agents for one process (our kubemark/kwok). They share
 * the NATS connection and the ApiClient; each has its own runtime, pod
 * informer (its node's live pod subjects, kit/bus `followEvents`) and work queue.
 */
export function hollowNodes(o: HollowNodesOptions): NodeAgent[] {
  const agents: NodeAgent[] = [];
  const first = o.firstIndex ?? 0;
  // One failure log for the process: the api or the bus away writes a few whole lines and a summary a window, not
  // one with a stack per node per round (10,000 lines a round at 5,000 nodes).
  const failures = o.failures ?? new FailureLog(o.log);
  for (let i = first; i < first + o.count; i++) {
    const node = hollowNodeConfig(i, o.prefix, o.resources, o.count === 1 ? o.nodeName : undefined);
    const runtime = new HollowRuntime({ podCidr: node.podCidr, hostIp: node.internalIp, startDelayMs: o.startDelayMs });
    agents.push(new NodeAgent({ ...o.agent, client: o.client, nc: o.nc, jsm: o.jsm, log: o.log, node, runtime, registry: o.registry, failures }));
  }
  return agents;
}

/**
 * Runs many agents under one signal. Unlike runAll, one agent failing does
 * not stop the others (it is logged): a hollow node dying alone is a
 * scenario, not a reason to take the process down.
 */
export function runAgents(agents: readonly NodeAgent[], log: Logger): Runnable {
  return {
    name: "hollow-nodes",
    async start(signal) {
      setMaxListeners(0, signal); // every agent listens to the one signal
      await Promise.all(agents.map((a) => a.start(signal).catch((err: unknown) => log.error({ err, agent: a.name }, "node agent failed"))));
    },
  };
}
