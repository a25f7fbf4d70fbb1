import { hostname } from "node:os";
import { parseArgs } from "node:util";
import { BACKENDS, VXLAN_PORT, type Backend } from "./net/vxlan.js";
import { DEFAULT_RESERVED } from "./stats/capacity.js";

/** The node agent's configuration: flags win over environment variables. */
export interface AgentConfig {
  natsUrl: string;
  metricsPort: number | undefined;
  /** Hollow nodes in this process; 0: one node named `nodeName`. */
  hollowNodes: number;
  prefix: string;
  firstIndex: number;
  nodeName: string;
  startDelayMs: number;
  leaseRenewMs: number;
  leaseDurationSeconds: number;
  restartBackoffMs: number;
  /** Pods waiting for a ConfigMap or Secret retried, config volumes refreshed, this often. */
  configResyncMs: number;
  cpu: string;
  memory: string;
  pods: string;
  /** hollow (default with --hollow-nodes), docker, process, or auto (docker when an engine answers, else process). */
  runtime: RuntimeName;
  /** spec.podCIDR of a real node (`--pod-cidr`); required with docker/process. */
  podCidr: string;
  /** Every node's pod CIDR together (routes and masquerading), `--cluster-cidr`. */
  clusterCidr: string;
  /** The node's InternalIP; default: its bridge's address. */
  nodeIp: string;
  /** How other machines' pods are reached (`--backend`): host-gw, vxlan, or auto (host-gw on a connected network, vxlan otherwise). */
  backend: Backend;
  /** The VXLAN overlay's UDP port (`--vxlan-port`, default 4789): the same on every node. */
  vxlanPort: number;
  /** Where pods' volumes, logs and state live (`--state-dir`). */
  stateDir: string;
  /** The process runtime's image store (`--images-dir`). */
  imagesDir: string;
  /** The DNS responder's port on the bridge address (53; tests use others). */
  dnsPort: number;
  /** Image pull back-off start (ms), doubling to 5 min. */
  pullBackoffMs: number;
  /** Stop every pod when the agent stops (`CHOREO_STOP_PODS_ON_EXIT=1`; choreo up/down). */
  stopPodsOnExit: boolean;
  /** Pods reconciled at once per node (`CHOREO_AGENT_WORKERS`): how many start in parallel. */
  workers: number;
  /** cpu and memory kept from a real node's allocatable (`--system-reserved`, `CHOREO_SYSTEM_RESERVED`; the kubelet's format `cpu=100m,memory=256Mi`). */
  systemReserved: string;
  /** The api's event-signing public key (PEM file, `CHOREO_EVENT_VERIFY_KEY`): pod events without its signature run nothing. Required by real runtimes. */
  eventVerifyKey: string;
}

/** The runtimes a node agent can drive. */
export const RUNTIMES = ["hollow", "docker", "process", "auto"] as const;
export type RuntimeName = (typeof RUNTIMES)[number];

const num = (v: string | undefined, dflt: number): number => (v !== undefined && v !== "" && Number.isFinite(Number(v)) ? Number(v) : dflt);

/** Reads flags (`--hollow-nodes N`, `--node-name-prefix P`, `--first-index I`, `--node-name N`) and CHOREO_* variables. */
export function loadConfig(argv = process.argv.slice(2), env = process.env): AgentConfig {
  const { values } = parseArgs({
    args: argv,
    options: {
      "hollow-nodes": { type: "string" },
      "node-name-prefix": { type: "string" },
      "first-index": { type: "string" },
      "node-name": { type: "string" },
      runtime: { type: "string" },
      "pod-cidr": { type: "string" },
      "cluster-cidr": { type: "string" },
      "node-ip": { type: "string" },
      backend: { type: "string" },
      "vxlan-port": { type: "string" },
      "state-dir": { type: "string" },
      "images-dir": { type: "string" },
      "dns-port": { type: "string" },
      "system-reserved": { type: "string" },
    },
    strict: true,
  });
  const metrics = env["CHOREO_METRICS_PORT"];
  const hollowNodes = num(values["hollow-nodes"] ?? env["CHOREO_HOLLOW_NODES"], 0);
  const runtime = values.runtime ?? env["CHOREO_RUNTIME"] ?? "hollow";
  if (!(RUNTIMES as readonly string[]).includes(runtime)) throw new Error(`--runtime must be one of ${RUNTIMES.join(", ")}, not ${JSON.stringify(runtime)}`);
  const backend = values.backend ?? env["CHOREO_NETWORK_BACKEND"] ?? "auto";
  if (!(BACKENDS as readonly string[]).includes(backend)) throw new Error(`--backend must be one of ${BACKENDS.join(", ")}, not ${JSON.stringify(backend)}`);
  const vxlanPort = num(values["vxlan-port"] ?? env["CHOREO_VXLAN_PORT"], VXLAN_PORT);
  if (!Number.isInteger(vxlanPort) || vxlanPort < 1 || vxlanPort > 65535) throw new Error(`--vxlan-port must be a UDP port, not ${vxlanPort}`);
  if (hollowNodes > 0 && runtime !== "hollow") throw new Error("--hollow-nodes runs hollow nodes; it cannot be combined with --runtime " + runtime);
  return {
    natsUrl: env["CHOREO_NATS_URL"] ?? "nats://127.0.0.1:14222",
    metricsPort: metrics ? Number(metrics) : undefined,
    hollowNodes,
    prefix: values["node-name-prefix"] ?? env["CHOREO_NODE_NAME_PREFIX"] ?? "hollow-",
    firstIndex: num(values["first-index"] ?? env["CHOREO_HOLLOW_FIRST_INDEX"], 0),
    nodeName: values["node-name"] ?? env["CHOREO_NODE_NAME"] ?? hostname().toLowerCase(),
    startDelayMs: num(env["CHOREO_HOLLOW_START_DELAY_MS"], 50),
    leaseRenewMs: num(env["CHOREO_LEASE_RENEW_MS"], 2_000),
    leaseDurationSeconds: num(env["CHOREO_LEASE_DURATION_SECONDS"], 10),
    restartBackoffMs: num(env["CHOREO_RESTART_BACKOFF_MS"], 10_000),
    configResyncMs: num(env["CHOREO_CONFIG_RESYNC_MS"], 10_000),
    cpu: env["CHOREO_NODE_CPU"] ?? "4",
    memory: env["CHOREO_NODE_MEMORY"] ?? "16Gi",
    pods: env["CHOREO_NODE_PODS"] ?? "110",
    runtime: runtime as RuntimeName,
    podCidr: values["pod-cidr"] ?? env["CHOREO_POD_CIDR"] ?? "",
    clusterCidr: values["cluster-cidr"] ?? env["CHOREO_CLUSTER_CIDR"] ?? "10.244.0.0/16",
    nodeIp: values["node-ip"] ?? env["CHOREO_NODE_IP"] ?? "",
    backend: backend as Backend,
    vxlanPort,
    stateDir: values["state-dir"] ?? env["CHOREO_STATE_DIR"] ?? "/var/lib/choreo/nodes",
    imagesDir: values["images-dir"] ?? env["CHOREO_IMAGES_DIR"] ?? "/var/lib/choreo/images",
    dnsPort: num(values["dns-port"] ?? env["CHOREO_DNS_PORT"], 53),
    pullBackoffMs: num(env["CHOREO_PULL_BACKOFF_MS"], 1_000),
    stopPodsOnExit: env["CHOREO_STOP_PODS_ON_EXIT"] === "1",
    workers: num(env["CHOREO_AGENT_WORKERS"], 4),
    eventVerifyKey: env["CHOREO_EVENT_VERIFY_KEY"] ?? "",
    systemReserved: values["system-reserved"] ?? env["CHOREO_SYSTEM_RESERVED"] ?? DEFAULT_RESERVED,
  };
}
