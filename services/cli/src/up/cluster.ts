import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startNats, startProcess, startRedis, waitFor, type ManagedProcess, type ServerHandle } from "@choreo/kit/testing";

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
  /** Hollow nodes hosted by the node-agent process (when the node agent exists). */
  hollowNodes: number;
}

export const DEFAULT_UP: UpOptions = {
  dataDir: ".choreo", host: "127.0.0.1", natsPort: 14222, redisPort: 16379, httpPort: 8080, httpsPort: 6443, grpcPort: 9090, metricsPort: 9100, hollowNodes: 3,
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
  /** Resolves when the cluster stopped (signal or failure). */
  stop(): Promise<void>;
}

function apiEnv(o: UpOptions): Record<string, string> {
  return {
    CHOREO_NATS_URL: `nats://127.0.0.1:${o.natsPort}`,
    CHOREO_REDIS_URL: `redis://127.0.0.1:${o.redisPort}`,
    CHOREO_API_HOST: o.host,
    CHOREO_API_HTTP_PORT: String(o.httpPort),
    CHOREO_API_HTTPS_PORT: String(o.httpsPort),
    CHOREO_API_GRPC_PORT: String(o.grpcPort),
    CHOREO_API_METRICS_PORT: String(o.metricsPort),
    CHOREO_DATA_DIR: o.dataDir,
    CHOREO_REPLICA_ID: "api-0",
  };
}

/** The kubeconfig kubectl and choreo use: https, the cluster's CA, the admin token. */
export function kubeconfigYaml(server: string, caPem: string, token: string): string {
  const ca = Buffer.from(caPem).toString("base64");
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: choreo",
    "  cluster:",
    `    server: ${server}`,
    `    certificate-authority-data: ${ca}`,
    "users:",
    "- name: choreo-admin",
    "  user:",
    `    token: ${token}`,
    "contexts:",
    "- name: choreo",
    "  context:",
    "    cluster: choreo",
    "    user: choreo-admin",
    "    namespace: default",
    "current-context: choreo",
    "",
  ].join("\n");
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
  const api = await supervise("api", () =>
    startProcess({
      name: "api",
      cmd: process.execPath,
      args: ["--import", "tsx", path.join(ROOT, "services/api/src/main.ts")],
      cwd: ROOT,
      env: apiEnv(opts),
      readyUrl: `http://${opts.host}:${opts.httpPort}/healthz`,
      timeoutMs: 60_000,
      logFile: path.join(logs, "api.log"),
    }), log, logs);
  supervisors.push(api);
  // The actors that exist in this checkout, each its own process.
  for (const [i, [name, extra]] of ACTORS.entries()) {
    const main = path.join(ROOT, `services/${name}/src/main.ts`);
    if (!existsSync(main)) continue;
    const metricsPort = opts.metricsPort + 1 + i;
    supervisors.push(
      await supervise(name, async () =>
        startProcess({
          name,
          cmd: process.execPath,
          args: ["--import", "tsx", main],
          cwd: ROOT,
          env: { CHOREO_NATS_URL: `nats://127.0.0.1:${opts.natsPort}`, CHOREO_METRICS_PORT: String(metricsPort), ...extra(opts) },
          readyUrl: `http://127.0.0.1:${metricsPort}/healthz`,
          timeoutMs: 60_000,
          logFile: path.join(logs, `${name}.log`),
        }), log, logs),
    );
  }

  const token = readFileSync(path.join(opts.dataDir, "tokens"), "utf8").split("\n")[0]?.trim() ?? "";
  const cert = path.join(opts.dataDir, "pki", "apiserver.crt");
  await waitFor(() => existsSync(cert), { timeoutMs: 10_000, message: "serving certificate" });
  const kubeconfig = path.join(opts.dataDir, "kubeconfig");
  writeFileSync(kubeconfig, kubeconfigYaml(`https://${opts.host}:${opts.httpsPort}`, readFileSync(cert, "utf8"), token), { mode: 0o600 });

  return {
    opts, kubeconfig, token, nats, redis,
    api: () => api.current(),
    actors: () => supervisors.slice(1).map((x) => x.name),
    async stop() {
      for (const sup of supervisors.slice(1).reverse()) await sup.stop();
      await api.stop();
      await redis.process().stop(10_000);
      await nats.process().stop(10_000);
      rmSync(pidFile, { force: true });
    },
  };
}

/** Actors `choreo up` starts when present, with their extra environment. */
const ACTORS: [string, (o: UpOptions) => Record<string, string>][] = [
  ["scheduler", () => ({})],
  ["replication", () => ({})],
  ["endpoints", () => ({})],
  ["node-agent", (o) => ({ CHOREO_HOLLOW_NODES: String(o.hollowNodes) })],
];

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
