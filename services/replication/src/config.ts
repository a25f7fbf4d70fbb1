// The replication actor's settings, from CHOREO_* environment variables.

export interface ReplicationConfig {
  natsUrl: string;
  metricsPort: number | undefined;
  /** Reconcile workers per controller. */
  workers: number;
  /** Most pods created or deleted per RC sync (Kubernetes' burstReplicas). */
  burst: number;
  /** Write Events (SuccessfulCreate…); off for benchmarks that count api writes per pod. */
  events: boolean;
  /** A fault point for the fault scenarios: kill -9 itself when the HPA controller has decided a scale, before writing it. */
  faultCrashBeforeHpaScale: boolean;
}

function int(env: NodeJS.ProcessEnv, name: string, dflt: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name}=${raw}: expected a positive integer`);
  return n;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): ReplicationConfig {
  return {
    natsUrl: env["CHOREO_NATS_URL"] ?? "nats://127.0.0.1:14222",
    metricsPort: env["CHOREO_METRICS_PORT"] ? int(env, "CHOREO_METRICS_PORT", 0) : undefined,
    workers: int(env, "CHOREO_REPLICATION_WORKERS", 8),
    burst: int(env, "CHOREO_REPLICATION_BURST", 500),
    events: env["CHOREO_EVENTS"] !== "0",
    faultCrashBeforeHpaScale: env["CHOREO_FAULT_CRASH_BEFORE_HPA_SCALE"] === "1",
  };
}
