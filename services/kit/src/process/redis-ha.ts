// Redis for an HA control plane, for tests, benchmarks and `choreo up --ha`:
// a primary and replicas (AOF each, one ACL user `api`, `default` off, the
// replicas authenticating to whichever is primary as that user) watched by
// Sentinels (quorum 2, a primary silent 1 s is down), which require a
// password of their own. What a client is given: the sentinels' addresses as
// `redis+sentinel://h:p,h:p,h:p/<master name>`, the data nodes' credentials
// file and the sentinels' (see redisClientOptions).
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { randomSecret, redisAcl, writeCredentials, writeSecretFile, type Credentials } from "../secrets/secrets.js";
import { freePort, startProcess, waitFor, type ManagedProcess } from "./process.js";
import { redisServerArgs } from "./servers.js";

/** One redis-server or sentinel of the set. */
export interface RedisHaMember {
  readonly port: number;
  readonly dir: string;
  process(): ManagedProcess;
  /** kill -9 (data on disk stays). */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory. */
  restart(): Promise<void>;
}

export interface RedisHaHandle {
  /** `redis+sentinel://127.0.0.1:p1,…/<masterName>`: what CHOREO_REDIS_URL takes. */
  readonly url: string;
  readonly masterName: string;
  /** The data nodes' user (`api`). */
  readonly credentials: Credentials;
  readonly credentialsFile: string;
  /** The sentinels' password (user `default`): what CHOREO_REDIS_SENTINEL_CREDENTIALS names. */
  readonly sentinelCredentials: Credentials;
  readonly sentinelCredentialsFile: string;
  readonly nodes: RedisHaMember[];
  readonly sentinels: RedisHaMember[];
  /** The data node the sentinels name primary now. */
  primary(): Promise<RedisHaMember>;
  /** A client of whichever node is primary, through the sentinels (never gives up reconnecting; errors swallowed). */
  client(): Redis;
  /** Waits until the sentinels name a primary other than `port` (a failover done); returns it. */
  failedOverFrom(port: number, timeoutMs?: number): Promise<RedisHaMember>;
  stop(): Promise<void>;
}

export interface RedisHaOptions {
  /** Replicas beside the primary (default 2). */
  replicas?: number;
  /** Sentinels (default 3; quorum 2). */
  sentinels?: number;
  /** The primary refuses writes unless this many replicas are connected (min-replicas-to-write; default 0). */
  minReplicasToWrite?: number;
  dir?: string;
  masterName?: string;
}

/** Starts a primary, its replicas and the sentinels watching them; resolves once every sentinel knows every replica. */
export async function startRedisHa(opts: RedisHaOptions = {}): Promise<RedisHaHandle> {
  if (process.env.CHOREO_TEST_TIER === "fast")
    throw new Error(`redis-server asked for in the fast test tier: a test that starts servers begins with the line "// test-tier: servers"`);
  const owned = !opts.dir;
  const root = opts.dir ?? mkdtempSync(path.join(os.tmpdir(), "choreo-redis-ha-"));
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const masterName = opts.masterName ?? "choreo";
  const credentials: Credentials = { user: "api", password: randomSecret() };
  const credentialsFile = path.join(root, "credentials");
  writeCredentials(credentialsFile, credentials);
  const sentinelCredentials: Credentials = { user: "default", password: randomSecret() };
  const sentinelCredentialsFile = path.join(root, "sentinel-credentials");
  writeCredentials(sentinelCredentialsFile, sentinelCredentials);
  const members: RedisHaMember[] = [];
  const stopAll = async (): Promise<void> => {
    await Promise.all(
      members.map((m) =>
        m
          .process()
          .stop(5_000)
          .catch(() => undefined),
      ),
    );
  };

  const member = async (name: string, dir: string, args: (port: number) => string[], ready: RegExp): Promise<RedisHaMember> => {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const port = await freePort();
    const launch = () =>
      startProcess({ name, cmd: "redis-server", args: args(port), readyWhen: ready, timeoutMs: 30_000, logFile: path.join(dir, `${name}.log`) });
    let proc = await launch();
    const m: RedisHaMember = {
      port,
      dir,
      process: () => proc,
      kill: () => proc.kill(),
      async restart() {
        await proc.kill();
        proc = await launch();
      },
    };
    members.push(m);
    return m;
  };

  try {
    const node = (i: number, primaryPort?: number) => {
      const dir = path.join(root, `redis-${i}`);
      return member(
        `redis-${i}`,
        dir,
        (port) => {
          // Any node may be primary after a failover: each authenticates to it as `api`, and announces loopback.
          const conf = path.join(dir, "redis.conf");
          writeSecretFile(
            conf,
            [
              redisAcl([credentials]),
              `masteruser ${credentials.user}`,
              `masterauth ${credentials.password}`,
              `min-replicas-to-write ${opts.minReplicasToWrite ?? 0}`,
              "min-replicas-max-lag 10",
              "replica-announce-ip 127.0.0.1",
              "",
            ].join("\n"),
          );
          return [...redisServerArgs(conf, port, dir), ...(primaryPort ? ["--replicaof", "127.0.0.1", String(primaryPort)] : [])];
        },
        /Ready to accept connections/,
      );
    };
    const primary = await node(0);
    const nodes = [primary];
    for (let i = 1; i <= (opts.replicas ?? 2); i++) nodes.push(await node(i, primary.port));
    const sentinels: RedisHaMember[] = [];
    for (let i = 0; i < (opts.sentinels ?? 3); i++) {
      const dir = path.join(root, `sentinel-${i}`);
      sentinels.push(
        await member(
          `sentinel-${i}`,
          dir,
          (port) => {
            // A sentinel rewrites its config (what it learnt): written once, then its own.
            const conf = path.join(dir, "sentinel.conf");
            writeSecretFile(
              conf,
              [
                `port ${port}`,
                "bind 127.0.0.1",
                `dir ${dir}`,
                `requirepass ${sentinelCredentials.password}`,
                `sentinel sentinel-pass ${sentinelCredentials.password}`,
                `sentinel monitor ${masterName} 127.0.0.1 ${primary.port} 2`,
                `sentinel auth-user ${masterName} ${credentials.user}`,
                `sentinel auth-pass ${masterName} ${credentials.password}`,
                `sentinel down-after-milliseconds ${masterName} 1000`,
                `sentinel failover-timeout ${masterName} 5000`,
                `sentinel parallel-syncs ${masterName} 1`,
                "",
              ].join("\n"),
            );
            return [conf, "--sentinel"];
          },
          /\+monitor master|Sentinel ID is/,
        ),
      );
    }
    const ask = async <T>(fn: (r: Redis) => Promise<T>): Promise<T> => {
      let last: unknown;
      for (const s of sentinels) {
        const r = new Redis({ port: s.port, host: "127.0.0.1", password: sentinelCredentials.password, lazyConnect: true, maxRetriesPerRequest: 0 });
        r.on("error", () => undefined);
        try {
          await r.connect();
          return await fn(r);
        } catch (err) {
          last = err;
        } finally {
          r.disconnect();
        }
      }
      throw last instanceof Error ? last : new Error("no sentinel answered");
    };
    const primaryPort = async (): Promise<number> => {
      const addr = (await ask((r) => r.call("SENTINEL", "get-master-addr-by-name", masterName))) as [string, string] | null;
      return Number(addr?.[1] ?? 0);
    };
    // Every sentinel knows the replicas and the other sentinels before a failover is asked of them.
    await waitFor(
      async () => {
        for (const s of sentinels) {
          const r = new Redis({ port: s.port, host: "127.0.0.1", password: sentinelCredentials.password, maxRetriesPerRequest: 0 });
          r.on("error", () => undefined);
          try {
            const replicas = (await r.call("SENTINEL", "replicas", masterName)) as unknown[];
            const peers = (await r.call("SENTINEL", "sentinels", masterName)) as unknown[];
            if (replicas.length < nodes.length - 1 || peers.length < sentinels.length - 1) return false;
          } catch {
            return false;
          } finally {
            r.disconnect();
          }
        }
        return true;
      },
      { timeoutMs: 30_000, message: "sentinels know every replica and each other" },
    );
    // With min-replicas-to-write the primary refuses writes until enough replicas are in sync (state=online): the first writes
    // (the api's bootstrap objects) would meet NOREPLICAS otherwise.
    const minGood = opts.minReplicasToWrite ?? 0;
    if (minGood > 0)
      await waitFor(
        async () => {
          const r = new Redis({ port: nodes[0]!.port, host: "127.0.0.1", username: credentials.user, password: credentials.password, maxRetriesPerRequest: 0 });
          r.on("error", () => undefined);
          try {
            const info = await r.info("replication");
            return (info.match(/^slave\d+:.*state=online/gm) ?? []).length >= minGood;
          } catch {
            return false;
          } finally {
            r.disconnect();
          }
        },
        { timeoutMs: 30_000, message: `the primary has ${minGood} replica(s) online (min-replicas-to-write)` },
      );
    const byPort = (port: number): RedisHaMember => {
      const m = nodes.find((n) => n.port === port);
      if (!m) throw new Error(`no data node on port ${port}`);
      return m;
    };
    return {
      url: `redis+sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(",")}/${masterName}`,
      masterName,
      credentials,
      credentialsFile,
      sentinelCredentials,
      sentinelCredentialsFile,
      nodes,
      sentinels,
      primary: async () => byPort(await primaryPort()),
      client() {
        const r = new Redis({
          sentinels: sentinels.map((s) => ({ host: "127.0.0.1", port: s.port })),
          name: masterName,
          username: credentials.user,
          password: credentials.password,
          sentinelPassword: sentinelCredentials.password,
          retryStrategy: () => 100,
          sentinelRetryStrategy: () => 100,
        });
        r.on("error", () => undefined);
        return r;
      },
      async failedOverFrom(port, timeoutMs = 30_000) {
        let now = port;
        await waitFor(
          async () => {
            now = await primaryPort().catch(() => port);
            return now !== port && now !== 0;
          },
          { timeoutMs, message: `a failover from the primary on port ${port}` },
        );
        return byPort(now);
      },
      async stop() {
        await stopAll();
        if (owned) rmSync(root, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await stopAll();
    if (owned) rmSync(root, { recursive: true, force: true });
    throw err;
  }
}
