import { hostname } from "node:os";

/** The scheduler's settings, from the environment. */
export interface Config {
  natsUrl: string;
  schedulerName: string;
  workers: number;
  graceMs: number;
  evictionMs: number;
  evictionRate: number;
  /** Run the node lifecycle (under leader election) beside the scheduler. */
  nodeLifecycle: boolean;
  /** Write Scheduled/FailedScheduling Events (CHOREO_EVENTS=0: not, for benchmarks). */
  events: boolean;
  leaderElect: boolean;
  identity: string;
  metricsPort: number | undefined;
}

const num = (v: string | undefined, d: number): number => (v === undefined || v === "" || Number.isNaN(Number(v)) ? d : Number(v));

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    natsUrl: env.CHOREO_NATS_URL ?? "nats://127.0.0.1:14222",
    schedulerName: env.CHOREO_SCHEDULER_NAME || "default-scheduler",
    workers: num(env.CHOREO_SCHEDULER_WORKERS, 128),
    graceMs: num(env.CHOREO_NODE_GRACE_SECONDS, 8) * 1000,
    evictionMs: num(env.CHOREO_EVICTION_SECONDS, 5) * 1000,
    evictionRate: num(env.CHOREO_EVICTION_NODES_PER_SECOND, 10),
    nodeLifecycle: env.CHOREO_NODE_LIFECYCLE !== "false",
    events: env.CHOREO_EVENTS !== "0",
    leaderElect: env.CHOREO_LEADER_ELECT !== "false",
    identity: env.CHOREO_IDENTITY || `${hostname()}-${process.pid}`,
    metricsPort: env.CHOREO_METRICS_PORT ? Number(env.CHOREO_METRICS_PORT) : undefined,
  };
}
