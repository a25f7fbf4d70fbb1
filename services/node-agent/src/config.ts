import { hostname } from "node:os";
import { parseArgs } from "node:util";

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
  cpu: string;
  memory: string;
  pods: string;
}

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
    },
    strict: true,
  });
  const metrics = env["CHOREO_METRICS_PORT"];
  return {
    natsUrl: env["CHOREO_NATS_URL"] ?? "nats://127.0.0.1:14222",
    metricsPort: metrics ? Number(metrics) : undefined,
    hollowNodes: num(values["hollow-nodes"] ?? env["CHOREO_HOLLOW_NODES"], 0),
    prefix: values["node-name-prefix"] ?? env["CHOREO_NODE_NAME_PREFIX"] ?? "hollow-",
    firstIndex: num(values["first-index"] ?? env["CHOREO_HOLLOW_FIRST_INDEX"], 0),
    nodeName: values["node-name"] ?? env["CHOREO_NODE_NAME"] ?? hostname().toLowerCase(),
    startDelayMs: num(env["CHOREO_HOLLOW_START_DELAY_MS"], 50),
    leaseRenewMs: num(env["CHOREO_LEASE_RENEW_MS"], 2_000),
    leaseDurationSeconds: num(env["CHOREO_LEASE_DURATION_SECONDS"], 10),
    restartBackoffMs: num(env["CHOREO_RESTART_BACKOFF_MS"], 10_000),
    cpu: env["CHOREO_NODE_CPU"] ?? "4",
    memory: env["CHOREO_NODE_MEMORY"] ?? "16Gi",
    pods: env["CHOREO_NODE_PODS"] ?? "110",
  };
}
