// The control plane `choreo up` starts before the actors: the servers (one
// nats-server and one redis-server, or with --ha the NATS cluster and Redis
// with Sentinels: ha.ts) and the api (one on the cluster's ports, or with
// --ha replicas on ports of their own behind HAProxy), each handed to the
// supervisor as it starts.
import path from "node:path";
import {
  API_NODE_FLAGS,
  startNats,
  startProcess,
  startRedis,
  type HaproxyHandle,
  type ManagedProcess,
  type RedisHaHandle,
  type ServerHandle,
} from "@choreo/kit/process";
import type { UpOptions } from "./cluster.js";
import { haApiEnv, replicaPorts, startApiBalancer, startHaServers, type ReplicaPorts } from "./ha.js";
import { ROOT } from "./node-setup.js";
import type { Supervised } from "./supervisor.js";

/** Supervises a process: `initial` when a harness started it already (a server), `launch` starts it (again); its log is `<logs>/<logName>.log`. */
export type Adopt = (name: string, initial: ManagedProcess | undefined, launch: () => Promise<ManagedProcess>, logName?: string) => Promise<Supervised>;

/**
 * Where a process finds the bus: the bare URL plus the path of the
 * `user:password` file (0600) startNats wrote — never the password in argv
 * (`ps` shows it to every local user) nor in the environment.
 */
export function busEnv(nats: ServerHandle): Record<string, string> {
  return { CHOREO_NATS_URL: nats.address, CHOREO_NATS_CREDENTIALS: nats.credentialsFile };
}

/** nats-server and redis-server on the cluster's ports, or with `ha` the NATS cluster and Redis with Sentinels. */
export async function startServers(o: UpOptions, logs: string, adopt: Adopt): Promise<{ nats: ServerHandle; redis: ServerHandle | RedisHaHandle }> {
  if (o.ha) return startHaServers(o.dataDir, logs, adopt);
  const nats = await startNats({ dir: path.join(o.dataDir, "nats"), port: o.natsPort, logFile: path.join(logs, "nats.log") });
  await adopt("nats-server", nats.process(), async () => (await nats.restart(), nats.process()), "nats");
  const redis = await startRedis({ dir: path.join(o.dataDir, "redis"), port: o.redisPort, logFile: path.join(logs, "redis.log") });
  await adopt("redis-server", redis.process(), async () => (await redis.restart(), redis.process()), "redis");
  return { nats, redis };
}

/** An api replica's environment: `ports` its own (with `ha`, HAProxy has the public ones). */
function apiEnv(o: UpOptions, nats: ServerHandle, redis: ServerHandle | RedisHaHandle, ports: ReplicaPorts): Record<string, string> {
  return {
    ...busEnv(nats),
    ...("sentinels" in redis ? haApiEnv(redis) : { CHOREO_REDIS_URL: redis.address, CHOREO_REDIS_CREDENTIALS: redis.credentialsFile }),
    CHOREO_API_HOST: o.host,
    CHOREO_API_HTTP_PORT: String(ports.httpPort),
    CHOREO_API_HTTPS_PORT: String(ports.httpsPort),
    CHOREO_API_GRPC_PORT: String(ports.grpcPort),
    CHOREO_API_METRICS_PORT: String(ports.metricsPort),
    CHOREO_DATA_DIR: o.dataDir,
    // Secrets' encryption keys (made 0600 by the api at its first start), beside the NATS and Redis credentials.
    CHOREO_ENCRYPTION_KEYS_FILE: path.join(o.dataDir, "encryption", "keys"),
    CHOREO_REPLICA_ID: `api-${ports.index}`,
    ...(o.serviceCidr ? { CHOREO_SERVICE_CIDR: o.serviceCidr } : {}),
    // Node IPAM gives joined nodes blocks of the same range the local nodes' --pod-cidr come from.
    CHOREO_CLUSTER_CIDR: o.clusterCidr,
  };
}

/**
 * One api on the public ports (`api`); with `ha`, `apiReplicas` replicas
 * (`api-<i>`) on ports of their own — the first makes the certificates the
 * others read — then HAProxy on the public ports in front of them.
 */
export async function startApis(
  o: UpOptions,
  nats: ServerHandle,
  redis: ServerHandle | RedisHaHandle,
  logs: string,
  adopt: Adopt,
): Promise<HaproxyHandle | undefined> {
  const ports = o.ha
    ? await replicaPorts(o.apiReplicas)
    : [{ index: 0, httpPort: o.httpPort, httpsPort: o.httpsPort, grpcPort: o.grpcPort, metricsPort: o.metricsPort }];
  for (const p of ports) {
    const name = o.ha ? `api-${p.index}` : "api";
    await adopt(name, undefined, () =>
      startProcess({
        name,
        cmd: process.execPath,
        args: [...API_NODE_FLAGS, "--import", "tsx", path.join(ROOT, "services/api/src/main.ts")],
        cwd: ROOT,
        env: apiEnv(o, nats, redis, p),
        readyUrl: `http://${o.host}:${p.httpPort}/healthz`,
        timeoutMs: 60_000,
        logFile: path.join(logs, `${name}.log`),
      }),
    );
  }
  return o.ha ? startApiBalancer(o, ports, path.join(logs, "haproxy.log"), adopt) : undefined;
}
