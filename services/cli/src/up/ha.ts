// `choreo up --ha`: the control plane with no single server. Three
// nats-servers in a cluster (the event stream R3), a Redis primary with two
// replicas watched by three Sentinels (the api follows a failover; a write is
// answered once the event log holds it: CHOREO_WRITE_DURABILITY=log), N api
// replicas on ports of their own and HAProxy on the cluster's public ports
// (https, http, gRPC) in front of them. Every one of these processes is
// supervised: restarted on its ports and data whenever it dies.
import path from "node:path";
import {
  freePort,
  startHaproxy,
  startNatsCluster,
  startRedisHa,
  type HaproxyHandle,
  type HaproxyListener,
  type NatsClusterHandle,
  type RedisHaHandle,
} from "@choreo/kit/process";
import type { Adopt } from "./control-plane.js";

/** One api replica's own ports (HAProxy listens on the cluster's). */
export interface ReplicaPorts {
  index: number;
  httpPort: number;
  httpsPort: number;
  grpcPort: number;
  metricsPort: number;
}

/** The NATS cluster and the Redis set, each member supervised as `nats-<i>`, `redis-<i>`, `sentinel-<i>`. */
export async function startHaServers(dataDir: string, logs: string, adopt: Adopt): Promise<{ nats: NatsClusterHandle; redis: RedisHaHandle }> {
  const nats = await startNatsCluster({ size: 3, dir: path.join(dataDir, "nats-cluster"), logDir: logs });
  for (const m of nats.members) await adopt(m.name, m.process(), async () => (await m.restart(), m.process()));
  // A primary without a connected replica refuses writes (min-replicas-to-write 1): a killed primary back as a primary before the
  // sentinels demote it takes no write the failover would throw away (a split brain); one replica may be lost.
  const redis = await startRedisHa({ replicas: 2, sentinels: 3, minReplicasToWrite: 1, dir: path.join(dataDir, "redis-ha") });
  for (const [i, m] of redis.nodes.entries()) await adopt(`redis-${i}`, m.process(), async () => (await m.restart(), m.process()));
  for (const [i, m] of redis.sentinels.entries()) await adopt(`sentinel-${i}`, m.process(), async () => (await m.restart(), m.process()));
  return { nats, redis };
}

/** What every api replica adds to its environment in HA: the Sentinels and the durability, the R3 stream. */
export function haApiEnv(redis: RedisHaHandle): Record<string, string> {
  return {
    CHOREO_REDIS_URL: redis.url,
    CHOREO_REDIS_CREDENTIALS: redis.credentialsFile,
    CHOREO_REDIS_SENTINEL_CREDENTIALS: redis.sentinelCredentialsFile,
    CHOREO_WRITE_DURABILITY: "log",
    CHOREO_EVENT_REPLICAS: "3",
  };
}

/** Free ports for `count` replicas, kept across their restarts. */
export async function replicaPorts(count: number): Promise<ReplicaPorts[]> {
  const out: ReplicaPorts[] = [];
  for (let index = 0; index < count; index++)
    out.push({ index, httpPort: await freePort(), httpsPort: await freePort(), grpcPort: await freePort(), metricsPort: await freePort() });
  return out;
}

/** HAProxy on the cluster's public ports, each replica checked on /readyz of its plain HTTP port; supervised as `haproxy`. */
export async function startApiBalancer(
  o: { host: string; httpPort: number; httpsPort: number; grpcPort: number; dataDir: string },
  replicas: ReplicaPorts[],
  logFile: string,
  adopt: Adopt,
): Promise<HaproxyHandle> {
  const listener = (name: string, port: number, served: (r: ReplicaPorts) => number): HaproxyListener => ({
    name,
    port,
    // The replicas listen where the cluster does (CHOREO_API_HOST); on every address: reached on loopback.
    servers: replicas.map((r) => ({ name: `api-${r.index}`, host: o.host === "0.0.0.0" ? "127.0.0.1" : o.host, port: served(r), healthPort: r.httpPort })),
  });
  const lb = await startHaproxy({
    host: o.host,
    dir: path.join(o.dataDir, "haproxy"),
    logFile,
    listeners: [
      listener("https", o.httpsPort, (r) => r.httpsPort),
      listener("http", o.httpPort, (r) => r.httpPort),
      listener("grpc", o.grpcPort, (r) => r.grpcPort),
    ],
  });
  await adopt("haproxy", lb.process(), async () => (await lb.restart(), lb.process()));
  return lb;
}
