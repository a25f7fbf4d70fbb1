import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startNats, startProcess, startRedis, waitFor, type ManagedProcess, type ServerHandle } from "@choreo/kit/process";
import { eventKeyPaths } from "@choreo/kit/bus";
import {
  actorIdentity,
  ensureTokenFile,
  hollowNodesIdentity,
  identityNatsPermissions,
  natsUserName,
  nodeIdentity,
  provisionIdentity,
  type Identity,
} from "@choreo/kit/secrets";
import { renderKubeconfig } from "../kubeconfig.js";

/** Where and on which ports `choreo up` runs the cluster. */
export interface UpOptions {
  dataDir: string;
  host: string;
  natsPort: number;
  redisPort: number;
  httpPort: number;
  httpsPort: number;
  grpcPort: number;
  metricsPort: number;
  /** Hollow nodes hosted by one more node-agent process (pods without processes; scale tests). */
  hollowNodes: number;
  /** Real nodes: one node-agent process each (`node-1` … with pod CIDRs 10.244.1.0/24 …). */
  nodes: number;
  /** The real nodes' runtime: docker, process, or auto (docker when an engine answers, else process). */
  runtime: "auto" | "docker" | "process";
  /** Where the process runtime finds images' root filesystems (built on first use). */
  imagesDir: string;
  /** Apply examples/ once the cluster is up (the web app, its Service and the sidecar pod). */
  examples: boolean;
}

export const DEFAULT_UP: UpOptions = {
  dataDir: ".choreo",
  host: "127.0.0.1",
  natsPort: 14222,
  redisPort: 16379,
  httpPort: 8080,
  httpsPort: 6443,
  grpcPort: 9090,
  metricsPort: 9100,
  hollowNodes: 0,
  nodes: 2,
  runtime: "auto",
  imagesDir: "/var/lib/choreo/images",
  examples: true,
};

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

/** A running local cluster. */
export interface LocalCluster {
  opts: UpOptions;
  kubeconfig: string;
  token: string;
  nats: ServerHandle;
  redis: ServerHandle;
  api(): ManagedProcess;
  /** Names of the actor processes running beside the api. */
  actors(): string[];
  /** The real nodes' runtime as resolved (docker or process), undefined without real nodes. */
  runtime: "docker" | "process" | undefined;
  /** Resolves when the cluster stopped (signal or failure). */
  stop(): Promise<void>;
}

/**
 * Where a process finds the bus: the bare URL plus the path of the
 * `user:password` file (0600) startNats wrote — never the password in argv
 * (`ps` shows it to every local user) nor in the environment.
 */
function busEnv(nats: ServerHandle): Record<string, string> {
  return { CHOREO_NATS_URL: nats.address, CHOREO_NATS_CREDENTIALS: nats.credentialsFile };
}

function apiEnv(o: UpOptions, nats: ServerHandle, redis: ServerHandle): Record<string, string> {
  return {
    ...busEnv(nats),
    CHOREO_REDIS_URL: redis.address,
    CHOREO_REDIS_CREDENTIALS: redis.credentialsFile,
    CHOREO_API_HOST: o.host,
    CHOREO_API_HTTP_PORT: String(o.httpPort),
    CHOREO_API_HTTPS_PORT: String(o.httpsPort),
    CHOREO_API_GRPC_PORT: String(o.grpcPort),
    CHOREO_API_METRICS_PORT: String(o.metricsPort),
    CHOREO_DATA_DIR: o.dataDir,
    // Secrets' encryption keys (made 0600 by the api at its first start), beside the NATS and Redis credentials.
    CHOREO_ENCRYPTION_KEYS_FILE: path.join(o.dataDir, "encryption", "keys"),
    CHOREO_REPLICA_ID: "api-0",
  };
}

/** The kubeconfig kubectl and choreo use: https, the cluster's CA, the admin token. */
export function kubeconfigYaml(server: string, caPem: string, token: string): string {
  return renderKubeconfig({ server, caPem, user: "choreo-admin", auth: { token }, context: "choreo", namespace: "default" });
}

/**
 * Starts nats-server, redis-server and the api with their data under
 * `dataDir`, restarts the api if it dies, and writes the kubeconfig.
 */
export async function up(partial: Partial<UpOptions> = {}, log: (line: string) => void = console.log): Promise<LocalCluster> {
  const opts: UpOptions = { ...DEFAULT_UP, ...partial };
  opts.dataDir = path.resolve(opts.dataDir);
  const logs = path.join(opts.dataDir, "logs");
  mkdirSync(logs, { recursive: true });
  const pidFile = path.join(opts.dataDir, "up.pid");
  if (existsSync(pidFile)) {
    const pid = Number(readFileSync(pidFile, "utf8"));
    if (pid && isAlive(pid)) throw new Error(`a cluster is already running from ${opts.dataDir} (pid ${pid}); stop it with choreo down`);
  }
  writeFileSync(pidFile, String(process.pid));

  const nats = await startNats({ dir: path.join(opts.dataDir, "nats"), port: opts.natsPort, logFile: path.join(logs, "nats.log") });
  const redis = await startRedis({ dir: path.join(opts.dataDir, "redis"), port: opts.redisPort, logFile: path.join(logs, "redis.log") });
  const supervisors: Supervised[] = [];
  // The api's token file (the administrator's bare token first), before the api reads it; the actors' lines are added below.
  const apiTokenFile = path.join(opts.dataDir, "tokens");
  ensureTokenFile(apiTokenFile);
  const api = await supervise(
    "api",
    () =>
      startProcess({
        name: "api",
        cmd: process.execPath,
        args: ["--import", "tsx", path.join(ROOT, "services/api/src/main.ts")],
        cwd: ROOT,
        env: apiEnv(opts, nats, redis),
        readyUrl: `http://${opts.host}:${opts.httpPort}/healthz`,
        timeoutMs: 60_000,
        logFile: path.join(logs, "api.log"),
      }),
    log,
    logs,
  );
  supervisors.push(api);
  // Real nodes: the runtime, then the local images it needs (built offline), before any agent starts.
  const runtime = opts.nodes > 0 ? await resolveRuntime(opts, log) : undefined;
  // The actors that exist in this checkout, each its own process.
  for (const [i, { name, main: service, args, env: extra, identity }] of actorsOf(opts, runtime).entries()) {
    const main = path.join(ROOT, `services/${service}/src/main.ts`);
    if (!existsSync(main)) continue;
    // Its own identity: a line in the api's token file (re-read by the api when it changes), the token in a 0600 file.
    const tokenFile = path.join(opts.dataDir, "identities", `${name}.token`);
    if (identity) provisionIdentity(apiTokenFile, tokenFile, identity);
    // And its own NATS user (credentials file 0600 beside nats.conf): what it may publish and hear.
    const bus = identity ? { CHOREO_NATS_CREDENTIALS: await nats.addUser(natsUserName(name), identityNatsPermissions(identity)) } : {};
    const metricsPort = opts.metricsPort + 1 + i;
    supervisors.push(
      await supervise(
        name,
        async () =>
          startProcess({
            name,
            cmd: process.execPath,
            args: ["--import", "tsx", main, ...args],
            cwd: ROOT,
            env: {
              ...busEnv(nats),
              CHOREO_METRICS_PORT: String(metricsPort),
              CHOREO_EVENT_VERIFY_KEY: eventKeyPaths(path.join(opts.dataDir, "pki")).publicKey,
              ...(identity ? { CHOREO_API_TOKEN_FILE: tokenFile } : {}),
              ...bus,
              ...extra,
            },
            readyUrl: `http://127.0.0.1:${metricsPort}/healthz`,
            timeoutMs: 60_000,
            logFile: path.join(logs, `${name}.log`),
          }),
        log,
        logs,
      ),
    );
  }

  const token = readFileSync(path.join(opts.dataDir, "tokens"), "utf8").split("\n")[0]?.trim() ?? "";
  const cert = path.join(opts.dataDir, "pki", "apiserver.crt");
  await waitFor(() => existsSync(cert), { timeoutMs: 10_000, message: "serving certificate" });
  const kubeconfig = path.join(opts.dataDir, "kubeconfig");
  writeFileSync(kubeconfig, kubeconfigYaml(`https://${opts.host}:${opts.httpsPort}`, readFileSync(cert, "utf8"), token), { mode: 0o600 });

  return {
    opts,
    kubeconfig,
    token,
    nats,
    redis,
    runtime,
    api: () => api.current(),
    actors: () => supervisors.slice(1).map((x) => x.name),
    async stop() {
      for (const sup of supervisors.slice(1).reverse()) await sup.stop();
      // The agents stopped their pods on the way out; this removes whatever a crash left behind.
      if (runtime) {
        const nodes = Array.from({ length: opts.nodes }, (_, i) => ["--node", `node-${i + 1}`]).flat();
        await nodeSetup(["cleanup", "--state-dir", path.join(opts.dataDir, "nodes"), ...nodes], log).catch((err: Error) => log(`clean-up: ${err.message}`));
      }
      await api.stop();
      await redis.process().stop(10_000);
      await nats.process().stop(10_000);
      rmSync(pidFile, { force: true });
    },
  };
}

/** An actor process `choreo up` starts (when its service exists in this checkout). */
interface ActorSpec {
  name: string;
  /** services/<main>/src/main.ts */
  main: string;
  args: string[];
  env: Record<string, string>;
  /** Who it is to the api (its token provisioned in <data dir>/identities/<name>.token). */
  identity: Identity | undefined;
}

/**
 * One node agent per real node, the hollow nodes' agent, then the
 * controllers. `stop` goes in reverse: the controllers stop before the
 * agents, so that nodes falling silent while the cluster shuts down are never
 * taken for failed nodes (their pods evicted), and on start every agent
 * renews its lease before the node lifecycle starts timing it.
 */
function actorsOf(o: UpOptions, runtime: "docker" | "process" | undefined): ActorSpec[] {
  const actors: ActorSpec[] = [];
  for (let i = 1; i <= o.nodes && runtime; i++) {
    actors.push({
      name: `node-${i}`,
      main: "node-agent",
      args: [
        "--node-name",
        `node-${i}`,
        "--runtime",
        runtime,
        "--pod-cidr",
        `10.244.${i}.0/24`,
        "--state-dir",
        path.join(o.dataDir, "nodes"),
        "--images-dir",
        o.imagesDir,
      ],
      // choreo down leaves nothing behind: the agents stop their pods when they stop.
      env: { CHOREO_STOP_PODS_ON_EXIT: "1" },
      identity: nodeIdentity(`node-${i}`),
    });
  }
  if (o.hollowNodes > 0) {
    actors.push({
      name: "hollow-nodes",
      main: "node-agent",
      args: ["--first-index", "100"],
      env: { CHOREO_HOLLOW_NODES: String(o.hollowNodes) },
      identity: hollowNodesIdentity("hollow-"),
    });
  }
  for (const name of ["scheduler", "replication", "endpoints"]) actors.push({ name, main: name, args: [], env: {}, identity: actorIdentity(name) });
  return actors;
}

/** Runs services/node-agent/src/node-setup.ts (prepare images, detect docker, clean up) and returns its output. */
async function nodeSetup(args: string[], log: (line: string) => void): Promise<string> {
  const { execFile } = await import("node:child_process");
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["--import", "tsx", path.join(ROOT, "services/node-agent/src/node-setup.ts"), ...args],
      { cwd: ROOT, timeout: 300_000 },
      (err, stdout, stderr) => {
        if (stderr.trim()) for (const line of stderr.trim().split("\n")) log(line);
        if (err) reject(new Error(`node setup ${args[0]} failed: ${stderr.trim().split("\n").pop() ?? err.message}`));
        else resolve(stdout.trim());
      },
    );
  });
}

/** docker when asked or (auto) when an engine answers, else process; then the images that runtime needs. */
async function resolveRuntime(o: UpOptions, log: (line: string) => void): Promise<"docker" | "process"> {
  const out = await nodeSetup(["prepare", "--runtime", o.runtime, "--images-dir", o.imagesDir], log);
  const runtime = out.split("\n").pop()?.trim();
  if (runtime !== "docker" && runtime !== "process") throw new Error(`node setup chose no runtime (${out})`);
  return runtime;
}

interface Supervised {
  name: string;
  current(): ManagedProcess;
  stop(): Promise<void>;
}

/** Starts a process and restarts it (after a second) whenever it dies, until stopped. */
async function supervise(name: string, launch: () => Promise<ManagedProcess>, log: (line: string) => void, logs: string): Promise<Supervised> {
  let proc = await launch();
  let stopping = false;
  void (async () => {
    while (!stopping) {
      const exit = await proc.exited;
      if (stopping) return;
      log(`${name} exited (${exit.code ?? exit.signal}); restarting — see ${path.join(logs, `${name}.log`)}`);
      await new Promise((r) => setTimeout(r, 1_000));
      try {
        proc = await launch();
      } catch (err) {
        log(`${name} restart failed: ${(err as Error).message.split("\n")[0]}`);
      }
    }
  })();
  return {
    name,
    current: () => proc,
    async stop() {
      stopping = true;
      await proc.stop(15_000);
    },
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops the cluster started from `dataDir` (SIGTERM to `choreo up`, then wait). */
export async function down(dataDir = DEFAULT_UP.dataDir): Promise<boolean> {
  const pidFile = path.join(path.resolve(dataDir), "up.pid");
  if (!existsSync(pidFile)) return false;
  const pid = Number(readFileSync(pidFile, "utf8"));
  if (!pid || !isAlive(pid)) {
    rmSync(pidFile, { force: true });
    return false;
  }
  process.kill(pid, "SIGTERM");
  await waitFor(() => !isAlive(pid), { timeoutMs: 60_000, message: `choreo up (pid ${pid}) to stop` });
  return true;
}
