import os from "node:os";
import path from "node:path";
import { podSecurityConfigFromEnv, type PodSecurityConfig } from "./registry/pods/pod-security/policy.js";
import { parseDuration } from "@choreo/kit/kube-proto";
import { defaultAdvertiseAddress } from "./kubernetes-service/keeper.js";

/** The api service's configuration, from the environment. */
export interface ApiConfig {
  natsUrl: string;
  redisUrl: string;
  host: string;
  httpPort: number;
  httpsPort: number;
  grpcPort: number;
  /** gRPC in plaintext (`CHOREO_API_GRPC_INSECURE=1`: behind a proxy that terminates TLS); default TLS as on HTTPS. */
  grpcInsecure: boolean;
  metricsPort: number;
  /** Where the plain metrics server listens (CHOREO_API_METRICS_HOST, default the api's host): 127.0.0.1 leaves /metrics to the authenticated gateway. */
  metricsHost: string;
  dataDir: string;
  /** File with one bearer token per line (created with a random token if missing). */
  tokenFile: string;
  serviceCidr: string;
  /** Node IPAM: pods' addresses, one block per node (`CHOREO_CLUSTER_CIDR`, default 10.244.0.0/16) … */
  clusterCidr: string;
  /** … of this prefix length (`CHOREO_NODE_CIDR_MASK_SIZE`, default 24). */
  nodeCidrMaskSize: number;
  /**
   * Where pods reach the api: the `kubernetes` Service's Endpoints (CHOREO_ADVERTISE_ADDRESS; default the
   * host's first non-loopback IPv4; undefined when it has none). The https port also listens there.
   */
  advertiseAddress: string | undefined;
  /** Changes the event log keeps; older watches answer 410. */
  eventRetention: number;
  /**
   * When a write is answered (`CHOREO_WRITE_DURABILITY`): `local` once Redis
   * applied it (AOF, fsync every second: a power cut may lose the last
   * second, and a failover what the new primary had not received); `replica`
   * once `durabilityReplicas` replicas have it too (WAIT); `log` once the event
   * log holds it (a lost Redis tail is put back from the log, recovery.ts).
   */
  writeDurability: "local" | "replica" | "log";
  /** Replicas a write waits for under `replica` (`CHOREO_WRITE_DURABILITY_REPLICAS`, default 1). */
  durabilityReplicas: number;
  /** The event stream's JetStream replicas (`CHOREO_EVENT_REPLICAS`, 1-5, default 1; 3 on a 3-server NATS cluster). */
  eventReplicas: number;
  /** Whether a new event stream republishes pod changes live (`CHOREO_POD_REPUBLISH`, default 1; 0 only to compare, node agents then read through a consumer each). */
  podRepublish: boolean;
  watchCacheSize: number;
  /** The object cache (`CHOREO_OBJECT_CACHE`, default 1; 0 only to compare: every read from Redis). */
  objectCache: boolean;
  /** Lists without a resourceVersion served from the object cache once it reached the store's revision. */
  consistentListFromCache: boolean;
  replicaId: string;
  faultCrashBeforePublishEvery: number;
  faultCrashAfterPublishEvery: number;
  /** The Ed25519 key the relay signs events with (PEM); default `<dataDir>/pki/event-signing.key`, made when missing. */
  eventSigningKey: string | undefined;
  /** Secret encryption keys (`<name>:<base64>` lines, first encrypts); default `<dataDir>/encryption/keys`, made when missing. */
  encryptionKeysFile: string;
  /** Pod Security Admission: CHOREO_POD_SECURITY_DEFAULT_ENFORCE (baseline), _DEFAULT_WARN, _DEFAULT_AUDIT, _EXEMPT_USERNAMES, _EXEMPT_NAMESPACES. */
  podSecurity: PodSecurityConfig;
  /**
   * The audit log: CHOREO_AUDIT_LOG (default `<dataDir>/audit/audit.log`; "" off), CHOREO_AUDIT_POLICY_FILE
   * (audit.k8s.io/v1 Policy; default: Metadata for all but health and lease reads), CHOREO_AUDIT_LOG_MAXSIZE (MB, 100), CHOREO_AUDIT_LOG_MAXBACKUP (10).
   */
  audit: { file: string; policyFile: string | undefined; maxSizeMB: number; maxBackups: number };
  /** How long an Event lives after its last write, in ms (CHOREO_EVENT_TTL, a Go duration as kube-apiserver's --event-ttl; default 1h; 0 keeps Events forever). */
  eventTtlMs: number;
  /**
   * Pods' ServiceAccount admission (a ServiceAccount that exists, `default` unless named, and its projected token, CA and namespace
   * mounted): on unless CHOREO_SERVICE_ACCOUNT_ADMISSION=0 (a cluster without the replication actor, which makes the `default` accounts).
   */
  serviceAccountAdmission: boolean;
  /**
   * API Priority and Fairness: CHOREO_API_MAX_REQUESTS_INFLIGHT requests run at once across the priority levels (600, as
   * kube-apiserver's 400 + 200; 0 turns flow control off), CHOREO_API_MAX_QUEUE_WAIT how long one may wait for its seat (a Go
   * duration, 8s: below the kit client's 10 s), CHOREO_API_MAX_QUEUED how many may wait in one level (50000: at ~3,000
   * writes a second the 8 s wait binds first; 9,000 waited at once in the 150,000-pod run); past either, 429.
   */
  flowControl: { concurrency: number; maxWaitMs: number; queueLimit: number };
}

/** A Go duration (`1h`, `90m`, `30s`) in ms; the variable's name in the error. */
function duration(env: NodeJS.ProcessEnv, name: string, dflt: string): number {
  const v = env[name] || dflt;
  let ns: number;
  try {
    ns = parseDuration(v, name);
  } catch {
    throw new Error(`${name} must be a duration such as 1h, 90m or 30s, got ${JSON.stringify(v)}`);
  }
  if (ns < 0) throw new Error(`${name} must not be negative, got ${JSON.stringify(v)}`);
  return Math.round(ns / 1e6);
}

function int(env: NodeJS.ProcessEnv, name: string, dflt: number): number {
  const v = env[name];
  if (v === undefined || v === "") return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
  return n;
}

/** CHOREO_EVENT_REPLICAS: JetStream takes 1 to 5 replicas. */
function replicas(env: NodeJS.ProcessEnv): number {
  const n = int(env, "CHOREO_EVENT_REPLICAS", 1);
  if (n < 1 || n > 5) throw new Error(`CHOREO_EVENT_REPLICAS must be 1 to 5, got ${n}`);
  return n;
}

/** CHOREO_WRITE_DURABILITY: local (default), replica or log. */
function durability(env: NodeJS.ProcessEnv): ApiConfig["writeDurability"] {
  const v = env["CHOREO_WRITE_DURABILITY"] || "local";
  if (v !== "local" && v !== "replica" && v !== "log") throw new Error(`CHOREO_WRITE_DURABILITY must be local, replica or log, got ${JSON.stringify(v)}`);
  return v;
}

/** Reads CHOREO_* variables; throws with the variable's name on bad values. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): ApiConfig {
  const dataDir = path.resolve(env["CHOREO_DATA_DIR"] ?? ".choreo");
  const retention = int(env, "CHOREO_EVENT_RETENTION", 1_000_000);
  return {
    natsUrl: env["CHOREO_NATS_URL"] ?? "nats://127.0.0.1:14222",
    redisUrl: env["CHOREO_REDIS_URL"] ?? "redis://127.0.0.1:16379",
    host: env["CHOREO_API_HOST"] ?? "127.0.0.1",
    httpPort: int(env, "CHOREO_API_HTTP_PORT", 8080),
    httpsPort: int(env, "CHOREO_API_HTTPS_PORT", 6443),
    grpcPort: int(env, "CHOREO_API_GRPC_PORT", 9090),
    grpcInsecure: env["CHOREO_API_GRPC_INSECURE"] === "1",
    metricsPort: int(env, "CHOREO_API_METRICS_PORT", 9100),
    metricsHost: env["CHOREO_API_METRICS_HOST"] || (env["CHOREO_API_HOST"] ?? "127.0.0.1"),
    dataDir,
    tokenFile: env["CHOREO_TOKEN_FILE"] ?? path.join(dataDir, "tokens"),
    serviceCidr: env["CHOREO_SERVICE_CIDR"] ?? "10.96.0.0/16",
    clusterCidr: env["CHOREO_CLUSTER_CIDR"] ?? "10.244.0.0/16",
    nodeCidrMaskSize: int(env, "CHOREO_NODE_CIDR_MASK_SIZE", 24),
    advertiseAddress: env["CHOREO_ADVERTISE_ADDRESS"] || defaultAdvertiseAddress(),
    eventRetention: retention,
    writeDurability: durability(env),
    durabilityReplicas: Math.max(1, int(env, "CHOREO_WRITE_DURABILITY_REPLICAS", 1)),
    eventReplicas: replicas(env),
    podRepublish: env["CHOREO_POD_REPUBLISH"] !== "0",
    watchCacheSize: Math.min(int(env, "CHOREO_WATCH_CACHE_SIZE", 100_000), retention),
    objectCache: env["CHOREO_OBJECT_CACHE"] !== "0",
    consistentListFromCache: env["CHOREO_CONSISTENT_LIST_FROM_CACHE"] === "1",
    replicaId: env["CHOREO_REPLICA_ID"] ?? `${os.hostname()}-${process.pid}`,
    faultCrashBeforePublishEvery: int(env, "CHOREO_FAULT_CRASH_BEFORE_PUBLISH_EVERY", 0),
    faultCrashAfterPublishEvery: int(env, "CHOREO_FAULT_CRASH_AFTER_PUBLISH_EVERY", 0),
    eventSigningKey: env["CHOREO_EVENT_SIGNING_KEY"] || undefined,
    encryptionKeysFile: env["CHOREO_ENCRYPTION_KEYS_FILE"] || path.join(dataDir, "encryption", "keys"),
    podSecurity: podSecurityConfigFromEnv(env),
    audit: {
      file: env["CHOREO_AUDIT_LOG"] ?? path.join(dataDir, "audit", "audit.log"),
      policyFile: env["CHOREO_AUDIT_POLICY_FILE"] || undefined,
      maxSizeMB: int(env, "CHOREO_AUDIT_LOG_MAXSIZE", 100),
      maxBackups: int(env, "CHOREO_AUDIT_LOG_MAXBACKUP", 10),
    },
    eventTtlMs: duration(env, "CHOREO_EVENT_TTL", "1h"),
    serviceAccountAdmission: env["CHOREO_SERVICE_ACCOUNT_ADMISSION"] !== "0",
    flowControl: {
      concurrency: int(env, "CHOREO_API_MAX_REQUESTS_INFLIGHT", 600),
      maxWaitMs: duration(env, "CHOREO_API_MAX_QUEUE_WAIT", "8s"),
      queueLimit: int(env, "CHOREO_API_MAX_QUEUED", 50_000),
    },
  };
}
