import os from "node:os";
import path from "node:path";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Registry } from "prom-client";
import type { ApiClient } from "@choreo/kit/client";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import { NodeAgent, type NodeAgentOptions } from "./agent.js";
import type { AgentConfig } from "./config.js";
import { ClusterDns } from "./dns/cluster-dns.js";
import { CLUSTER_DOMAIN } from "./dns/resolv-conf.js";
import { LogServer } from "./logs/log-server.js";
import { ExecServer } from "./streams/exec-server.js";
import { PortForwardServer } from "./streams/port-forward-server.js";
import { BridgeNetwork } from "./net/bridge-network.js";
import { NodeRoutes } from "./net/routes.js";
import { PeerProbe, type ProbeTarget } from "./net/peer-probe.js";
import { allocatedPodCidr } from "./node.js";
import { NAMES } from "./net/types.js";
import { ServiceProxy } from "./proxy/service-proxy.js";
import { DockerRuntime } from "./runtime/docker/docker-runtime.js";
import { ProcessRuntime } from "./runtime/process/process-runtime.js";
import type { Runtime } from "./runtime/runtime.js";
import { machineResources, parseReserved } from "./stats/capacity.js";
import { CgroupReader } from "./stats/cgroup-reader.js";
import { CgroupUsage } from "./stats/node-stats.js";
import { StatsServer } from "./stats/stats-server.js";

/** What a real node shares with the process. */
export interface RealNodeDeps {
  client: ApiClient;
  nc: NatsConnection;
  jsm: JetStreamManager;
  log: Logger;
  registry?: Registry;
  /** Ends the wait for an allocated pod CIDR (the process's shutdown). */
  signal?: AbortSignal;
  agent?: Partial<
    Pick<NodeAgentOptions, "leaseRenewMs" | "leaseDurationSeconds" | "restartBackoff" | "events" | "stopPodsOnExit" | "workers" | "configResyncMs">
  >;
}

/** A real node: its agent, and the network to take down after it when pods stop on exit. */
export interface RealNode {
  agent: NodeAgent;
  network: BridgeNetwork;
}

/**
 * Assembles one real node (docker or process runtime):
 *
 *   BridgeNetwork (cb-<node>, gateway = first address of --pod-cidr)
 *     └ runtime (docker | process) ─ pods get IPs on the bridge, resolv.conf → gateway
 *   NodeAgent ─ extras: ServiceProxy (iptables), ClusterDns (gateway:53), NodeRoutes (host-gw / vxlan),
 *               PeerProbe (TCP to the routed peers hosting endpoints → the proxy leaves out the unreachable), LogServer (NATS), StatsServer (NATS, cgroups)
 */
export async function realNode(cfg: AgentConfig, runtimeName: "docker" | "process", d: RealNodeDeps): Promise<RealNode> {
  const node = cfg.nodeName;
  const log = d.log.child({ node });
  // Without --pod-cidr the api's node IPAM gives the node its block (spec.podCIDR), kept across restarts.
  const podCidr =
    cfg.podCidr ||
    (await allocatedPodCidr(d.client, { name: node, labels: { "choreo.dev/runtime": runtimeName } }, d.signal ?? new AbortController().signal, (err) =>
      log.warn({ err }, "waiting for the node's pod CIDR"),
    ));
  if (!cfg.podCidr) log.info({ podCidr }, "pod CIDR allocated by the api");
  const network = new BridgeNetwork({ node, podCidr, clusterCidr: cfg.clusterCidr, log });
  await network.init();
  const stateDir = path.resolve(cfg.stateDir, node);
  // The node's InternalIP (its pods' status.hostIP): the bridge's address unless given.
  const nodeIp = cfg.nodeIp || network.gateway;
  // Capacity is the machine; allocatable keeps the reserve back (what the scheduler fits pods into).
  const machine = machineResources(os.cpus().length, BigInt(os.totalmem()), parseReserved(cfg.systemReserved));
  const common = { node, network, stateDir, dnsServer: network.gateway, clusterDomain: CLUSTER_DOMAIN, hostIp: nodeIp, log };
  const runtime: Runtime =
    runtimeName === "docker"
      ? new DockerRuntime({ ...common, pullBackoff: { initialMs: cfg.pullBackoffMs, maxMs: 300_000 } })
      : new ProcessRuntime({ ...common, imagesDir: cfg.imagesDir });
  const agent = new NodeAgent({
    ...d.agent,
    client: d.client,
    nc: d.nc,
    jsm: d.jsm,
    log: d.log,
    registry: d.registry,
    runtime,
    stateDir,
    node: {
      name: node,
      podCidr,
      internalIp: nodeIp,
      ...machine.allocatable,
      capacity: machine.capacity,
      pods: cfg.pods,
      labels: { "choreo.dev/runtime": runtimeName },
      runtimeVersion: runtimeName === "docker" ? "docker://20.10" : "process://1",
    },
    extras: (a): Runnable[] => {
      // Peers on other machines hosting endpoints, probed every 250 ms: the proxy leaves out those that stop answering.
      const probeMs = peerProbeIntervalMs();
      const probe: PeerProbe = new PeerProbe({
        node,
        log,
        registry: d.registry,
        intervalMs: probeMs || 250,
        targets: (): ProbeTarget[] => {
          const hosting = proxy.endpointNodes();
          return routes.routed().filter((p) => hosting.has(p.node));
        },
      });
      const proxy: ServiceProxy = new ServiceProxy({
        node,
        client: d.client,
        nc: d.nc,
        jsm: d.jsm,
        log,
        chainPrefix: NAMES.chainPrefix(node),
        clusterCidr: cfg.clusterCidr,
        ...(probeMs > 0 ? { peers: probe } : {}),
        registry: d.registry,
      });
      // A deleted pod keeps serving until the Endpoints no longer send it traffic (pod-reconciler deregistrationWait).
      a.endpointsListing = (ip) => proxy.lists(ip);
      // One Services and one Endpoints informer per node: DNS reads the proxy's caches.
      const dns = new ClusterDns({
        stores: { services: proxy.services, endpoints: proxy.endpoints },
        log,
        listen: { address: network.gateway, port: cfg.dnsPort },
        domain: CLUSTER_DOMAIN,
        metrics: d.registry,
        // Pods only (this node's and, routed here, other nodes'), and the host on the bridge address.
        clients: [network.podCidr, cfg.clusterCidr],
      });
      const usage = new CgroupUsage({ node, runtimeName, runtime, cgroups: new CgroupReader() });
      // Other nodes' pods through their InternalIPs (host-gw) or the VXLAN overlay; agents on one machine are reached by their bridges.
      const routes = new NodeRoutes({
        node,
        podCidr: network.podCidr,
        clusterCidr: cfg.clusterCidr,
        nodeIp,
        backend: cfg.backend,
        vxlanPort: cfg.vxlanPort,
        client: d.client,
        nc: d.nc,
        jsm: d.jsm,
        log,
      });
      return [
        proxy,
        dns,
        routes,
        ...(probeMs > 0 ? [probe] : []),
        new LogServer({ nc: d.nc, node, runtime, pods: a.informer, log }),
        new ExecServer({ nc: d.nc, node, runtime, pods: a.informer, log }),
        new PortForwardServer({ nc: d.nc, node, runtime, pods: a.informer, log }),
        new StatsServer({ nc: d.nc, node, source: usage, log }),
      ];
    },
  });
  return { agent, network };
}

/** `CHOREO_PEER_PROBE_MS`: between probes of the peer nodes (default 250); 0 turns the probing off (the proxy then follows the Endpoints only, as kube-proxy). */
export function peerProbeIntervalMs(env: NodeJS.ProcessEnv = process.env): number {
  const v = env["CHOREO_PEER_PROBE_MS"];
  const n = v === undefined || v === "" ? 250 : Number(v);
  return Number.isFinite(n) && n >= 0 ? n : 250;
}
