import { appendFileSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import path from "node:path";
import { NODE_FLAGS, startProcess, waitFor, type HaproxyHandle, type ManagedProcess, type RedisHaHandle, type ServerHandle } from "@choreo/kit/process";
import { eventKeyPaths } from "@choreo/kit/bus";
import { onAbort } from "@choreo/kit/lifecycle";
import { createLogger, type Logger } from "@choreo/kit/log";
import {
  actorIdentity,
  ensureTokenFile,
  hollowNodesIdentity,
  identityNatsPermissions,
  natsUserName,
  nodeIdentity,
  provisionIdentity,
  subscriberNatsPermissions,
  type Identity,
} from "@choreo/kit/secrets";
import { renderKubeconfig, type EventLogAccess } from "../kubeconfig.js";
import { pidDir, sweep, writeClusterRecord, type SweepReport } from "./leftovers.js";
import { busEnv, startApis, startServers } from "./control-plane.js";
import { nodeSetup, ROOT } from "./node-setup.js";
import { Progress } from "./progress.js";
import { processStartTime, Shutdown, supervise, type Supervised } from "./supervisor.js";

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
  /** The real nodes' names: this prefix and 1, 2, … */
  nodePrefix: string;
  /** The pods' addresses: real node i gets the i-th /24 of it as its pod CIDR. */
  clusterCidr: string;
  /** The Services' cluster IPs (the api's CHOREO_SERVICE_CIDR); undefined: the api's default, 10.96.0.0/16. */
  serviceCidr?: string;
  /** The real nodes' runtime: docker, process, or auto (docker when an engine answers, else process). */
  runtime: "auto" | "docker" | "process";
  /** Where the process runtime finds images' root filesystems (built on first use). */
  imagesDir: string;
  /** Apply examples/ once the cluster is up (the web app, its Service and the sidecar pod). */
  examples: boolean;
  /**
   * No single server (see ha.ts): 3 nats-servers (R3 event stream), a Redis
   * primary + 2 replicas + 3 Sentinels (durability log), `apiReplicas` api
   * replicas behind HAProxy on the public ports. --nats-port/--redis-port are
   * not used (free ports; the URLs are in the output).
   */
  ha: boolean;
  /** api replicas with `ha` (default 3). */
  apiReplicas: number;
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
  nodePrefix: "node-",
  clusterCidr: "10.244.0.0/16",
  runtime: "auto",
  imagesDir: "/var/lib/choreo/images",
  examples: true,
  ha: false,
  apiReplicas: 3,
};

/** A running local cluster. */
export interface LocalCluster {
  opts: UpOptions;
  kubeconfig: string;
  token: string;
  /** nats-server, or with `ha` the NATS cluster as one (its url lists every member). */
  nats: ServerHandle;
  /** redis-server, or with `ha` the primary, replicas and Sentinels. */
  redis: ServerHandle | RedisHaHandle;
  /** With `ha`: HAProxy in front of the api replicas. */
  haproxy?: HaproxyHandle;
  /** The real nodes' names. */
  nodes: string[];
  /**
   * The read-only event-stream subscriber's NATS credentials (`user:password`,
   * 0600, `<data-dir>/nats/subscriber.credentials`): reads the event log, may
   * neither publish nor call the api. The kubeconfig names it for `choreo events`.
   */
  subscriberCredentials: string;
  /** The api (with `ha`: the first replica). */
  api(): ManagedProcess;
  /** Every api replica (one without `ha`). */
  apis(): ManagedProcess[];
  /** Names of the actor processes running beside the api. */
  actors(): string[];
  /** The real nodes' runtime as resolved (docker or process), undefined without real nodes. */
  runtime: "docker" | "process" | undefined;
  /** Stops every process (never restarting one meanwhile) and removes what its nodes made. */
  stop(): Promise<void>;
}

/**
 * The kubeconfig kubectl and choreo use: https, the cluster's CA, the admin token; where `choreo events` reads
 * the event log; and the gRPC door (@choreo/client reads both extensions).
 */
export function kubeconfigYaml(server: string, caPem: string, token: string, eventLog?: EventLogAccess, grpcServer?: string): string {
  return renderKubeconfig({
    server,
    caPem,
    user: "choreo-admin",
    auth: { token },
    context: "choreo",
    namespace: "default",
    ...(eventLog ? { eventLog } : {}),
    ...(grpcServer ? { grpcServer } : {}),
  });
}

/**
 * `choreo up`'s own log (supervision, clean-up): pino JSON lines in
 * `<logs>/up.log`, and on stderr too unless stderr is a terminal (there the
 * progress lines show what happens: a JSON line would break them; a warning
 * or an error is shown as one short line through `notice` instead).
 */
function upLogger(logs: string, notice: (line: string) => void): Logger {
  const fd = openSync(path.join(logs, "up.log"), "a", 0o600);
  const toStderr = !process.stderr.isTTY;
  return createLogger({
    service: "choreo-up",
    destination: {
      write(line: string) {
        writeSync(fd, line);
        if (toStderr) process.stderr.write(line);
        else notice(noticeOf(line) ?? "");
      },
    },
  });
}

/** A warning's or error's log line as a person reads it: `! process exited; restarting (process=api code=1 …)`; undefined below warn. */
export function noticeOf(line: string): string | undefined {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof rec["level"] !== "number" || rec["level"] < 40) return undefined;
  const fields = Object.entries(rec)
    .filter(([k, v]) => !["level", "time", "service", "msg"].includes(k) && v !== undefined && v !== null)
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
  return `! ${String(rec["msg"] ?? "")}${fields.length ? ` (${fields.join(" ")})` : ""}`;
}

/** What a node-setup run logs (pino JSON lines): `<logs>/node-setup.log`, never the terminal. */
function setupLog(logs: string): (line: string) => void {
  return (line) => appendFileSync(path.join(logs, "node-setup.log"), `${line}\n`);
}

/** The pod CIDR of real node 1 … `count`: the i-th /24 of `clusterCidr` (10.244.0.0/16 → 10.244.1.0/24, …). */
export function nodePodCidrs(clusterCidr: string, count: number): string[] {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(clusterCidr);
  const octets = m ? m.slice(1, 5).map(Number) : [];
  const bits = m ? Number(m[5]) : NaN;
  if (!m || octets.some((o) => o > 255) || !(bits >= 8 && bits <= 24)) throw new Error(`--cluster-cidr must be an IPv4 CIDR of /8 to /24, got ${clusterCidr}`);
  const base = (((octets[0]! << 24) | (octets[1]! << 16) | (octets[2]! << 8) | octets[3]!) >>> 0) & ~(2 ** (32 - bits) - 1);
  if (count >= 2 ** (24 - bits)) throw new Error(`--cluster-cidr ${clusterCidr} has no room for ${count} nodes' /24s`);
  return Array.from({ length: count }, (_, i) => {
    const a = (base >>> 0) + (i + 1) * 256;
    return `${a >>> 24}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.0/24`;
  });
}

/**
 * Starts nats-server, redis-server, the api and the actors with their data
 * under `dataDir`, supervises every one of them (restarted with a backoff
 * whenever it dies, its pid in `<dataDir>/pids`), and writes the kubeconfig.
 * When `signal` aborts, no process is restarted any more (the cluster is
 * stopping; during the start, what started is stopped and this rejects). A
 * data dir whose last `choreo up` did not stop (kill -9) is swept first.
 */
export async function up(
  partial: Partial<UpOptions> = {},
  progress: Progress = new Progress({ write: () => undefined, tty: false, quiet: true }),
  signal?: AbortSignal,
): Promise<LocalCluster> {
  const opts: UpOptions = { ...DEFAULT_UP, ...partial };
  opts.dataDir = path.resolve(opts.dataDir);
  const podCidrs = nodePodCidrs(opts.clusterCidr, opts.nodes);
  const logs = path.join(opts.dataDir, "logs");
  mkdirSync(logs, { recursive: true });
  const logger = upLogger(logs, (line) => line && progress.print(line));
  const log = setupLog(logs);
  const pidFile = path.join(opts.dataDir, "up.pid");
  if (existsSync(pidFile)) {
    const pid = upPid(pidFile);
    if (pid) throw new Error(`a cluster is already running from ${opts.dataDir} (pid ${pid}); stop it with choreo down`);
    // The last choreo up from here died without stopping its cluster: what it left goes first (ports, bridges).
    const swept = await progress.run(
      "leftovers removed",
      () => sweep(opts.dataDir, log),
      (r) => `${r.removed.length} of a cluster that did not stop${r.remaining.length ? `, ${r.remaining.length} could not be` : ""}`,
    );
    reportSweep(swept, opts.dataDir, logger);
  }
  writeFileSync(pidFile, `${process.pid} ${processStartTime(process.pid) ?? ""}\n`);
  const pids = pidDir(opts.dataDir);
  const nodes = podCidrs.map((_, i) => `${opts.nodePrefix}${i + 1}`);
  const stateDir = path.join(opts.dataDir, "nodes");
  writeClusterRecord(opts.dataDir, { nodes, stateDir });

  const shutdown = new Shutdown();
  if (signal) onAbort(signal, () => shutdown.begin());
  /** The servers (nats, redis, sentinels), the api replicas and HAProxy, then the actors: each in the order they started. */
  const servers: Supervised[] = [];
  const apis: Supervised[] = [];
  const actors: Supervised[] = [];
  let runtime: "docker" | "process" | undefined;
  let stopping: Promise<void> | undefined;
  const stopAll = (): Promise<void> =>
    (stopping ??= (async () => {
      shutdown.begin();
      // Controllers before agents (see actorsOf), the api after them, the servers last. The controllers
      // together, then the agents together: each waits at most its own stop, not the sum of all of them.
      const agents = new Set([...nodes, "hollow-nodes"]);
      await Promise.all(actors.filter((a) => !agents.has(a.name)).map((a) => a.stop(15_000)));
      await Promise.all(actors.filter((a) => agents.has(a.name)).map((a) => a.stop(15_000)));
      // The agents stopped their pods on the way out; this removes whatever a crash left behind.
      if (runtime && nodes.length > 0)
        await nodeSetup(["cleanup", "--state-dir", stateDir, ...nodes.flatMap((n) => ["--node", n])], log).catch((err: Error) =>
          logger.error({ err: err.message }, "node clean-up failed"),
        );
      // HAProxy before the replicas; the Sentinels before the Redis nodes (no failover while stopping).
      for (const sup of [...servers, ...apis].reverse()) await sup.stop(10_000);
      rmSync(pids, { recursive: true, force: true });
      rmSync(pidFile, { force: true });
      logger.info({ dataDir: opts.dataDir }, "cluster stopped");
    })());
  const started = async (sup: Promise<Supervised>, into: Supervised[] = actors): Promise<Supervised> => {
    const s = await sup;
    into.push(s);
    if (shutdown.stopping) throw new Error("interrupted");
    return s;
  };
  const watch = (name: string) => ({ shutdown, log: logger, logFile: path.join(logs, `${name}.log`), pidDir: pids });

  const adopt = (name: string, initial: ManagedProcess | undefined, launch: () => Promise<ManagedProcess>, logName = name): Promise<Supervised> =>
    started(supervise({ name, initial, launch, ...watch(logName) }), servers);

  try {
    const { nats, redis, subscriberCredentials } = await progress.run(
      "bus and store started",
      async (step) => {
        step.update(opts.ha ? "3 nats-servers, Redis with Sentinels" : "nats-server, redis-server");
        const servers = await startServers(opts, logs, adopt);
        // Event-stream subscribers (choreo events, @choreo/client subscribe()): a read-only NATS user of their own.
        return { ...servers, subscriberCredentials: await servers.nats.addUser("subscriber", subscriberNatsPermissions()) };
      },
      (x) => `${x.nats.address}, ${"sentinels" in x.redis ? x.redis.url : x.redis.address}`,
    );
    // The api's token file (the administrator's bare token first), before the api reads it; the actors' lines are added below.
    const apiTokenFile = path.join(opts.dataDir, "tokens");
    ensureTokenFile(apiTokenFile);
    const haproxy = await progress.run(
      "api ready",
      () =>
        startApis(opts, nats, redis, logs, (name, initial, launch, logName = name) => started(supervise({ name, initial, launch, ...watch(logName) }), apis)),
      (h) => (h ? `${opts.apiReplicas} replicas behind HAProxy, ` : "") + `https://${opts.host}:${opts.httpsPort}`,
    );
    // Real nodes: the runtime, then the local images it needs (built offline), before any agent starts.
    runtime =
      opts.nodes > 0
        ? await progress
            .run(
              "images ready",
              () => resolveRuntime(opts, log),
              (r) => r.summary,
            )
            .then((r) => r.runtime)
        : undefined;
    if (shutdown.stopping) throw new Error("interrupted");
    // The actors that exist in this checkout, each its own process.
    for (const [i, { name, main: service, args, env: extra, identity }] of actorsOf(opts, runtime, nodes, podCidrs).entries()) {
      const main = path.join(ROOT, `services/${service}/src/main.ts`);
      if (!existsSync(main)) continue;
      // Its own identity: a line in the api's token file (re-read by the api when it changes), the token in a 0600 file.
      const tokenFile = path.join(opts.dataDir, "identities", `${name}.token`);
      if (identity) provisionIdentity(apiTokenFile, tokenFile, identity);
      // And its own NATS user (credentials file 0600 beside nats.conf): what it may publish and hear.
      const bus = identity ? { CHOREO_NATS_CREDENTIALS: await nats.addUser(natsUserName(name), identityNatsPermissions(identity)) } : {};
      const metricsPort = opts.metricsPort + 1 + i;
      // What the step says: a node agent and its runtime (or how many hollow nodes it hosts), then its pid.
      const what =
        service !== "node-agent"
          ? ""
          : name === "hollow-nodes"
            ? `node agent of ${opts.hollowNodes} hollow node${opts.hollowNodes === 1 ? "" : "s"}; `
            : `node agent, ${runtime ?? "process"} runtime; `;
      const step = progress.begin(`${name} started`, what.replace(/; $/, ""));
      await started(
        supervise({
          name,
          launch: () =>
            startProcess({
              name,
              cmd: process.execPath,
              args: [...NODE_FLAGS, "--import", "tsx", main, ...args],
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
          ...watch(name),
        }),
      ).then(
        (sup) => step.done(`${what}pid ${sup.current().pid}`),
        (err: Error) => (step.fail(err.message), Promise.reject(err)),
      );
    }

    const token = readFileSync(path.join(opts.dataDir, "tokens"), "utf8").split("\n")[0]?.trim() ?? "";
    const cert = path.join(opts.dataDir, "pki", "apiserver.crt");
    await waitFor(() => existsSync(cert), { timeoutMs: 10_000, message: "serving certificate" });
    const kubeconfig = path.join(opts.dataDir, "kubeconfig");
    writeFileSync(
      kubeconfig,
      kubeconfigYaml(
        `https://${opts.host}:${opts.httpsPort}`,
        readFileSync(cert, "utf8"),
        token,
        { natsUrl: nats.address, credentials: subscriberCredentials },
        `grpcs://${opts.host}:${opts.grpcPort}`,
      ),
      { mode: 0o600 },
    );
    logger.info({ dataDir: opts.dataDir, processes: [...servers, ...apis, ...actors].map((x) => `${x.name}:${x.current().pid}`) }, "cluster up; supervising");

    return {
      opts,
      kubeconfig,
      token,
      nats,
      redis,
      haproxy,
      nodes,
      subscriberCredentials,
      runtime,
      api: () => apis[0]!.current(),
      apis: () => apis.filter((x) => x.name !== "haproxy").map((x) => x.current()),
      actors: () => actors.map((x) => x.name),
      stop: stopAll,
    };
  } catch (err) {
    // A failed or interrupted start leaves nothing running either.
    await stopAll();
    throw err;
  }
}

/** Logs what a sweep removed (and what it could not). */
function reportSweep(report: SweepReport, dataDir: string, logger: Logger): void {
  if (report.removed.length > 0) logger.warn({ dataDir, removed: report.removed }, "removed the leftovers of a cluster that did not stop");
  if (report.remaining.length > 0) logger.error({ dataDir, remaining: report.remaining }, "leftovers of a cluster could not be removed");
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
function actorsOf(o: UpOptions, runtime: "docker" | "process" | undefined, nodes: string[], podCidrs: string[]): ActorSpec[] {
  const actors: ActorSpec[] = [];
  for (const [i, node] of (runtime ? nodes : []).entries()) {
    actors.push({
      name: node,
      main: "node-agent",
      args: [
        "--node-name",
        node,
        "--runtime",
        runtime ?? "process",
        "--pod-cidr",
        podCidrs[i] ?? "",
        "--state-dir",
        path.join(o.dataDir, "nodes"),
        "--images-dir",
        o.imagesDir,
      ],
      // choreo down leaves nothing behind: the agents stop their pods when they stop.
      env: { CHOREO_STOP_PODS_ON_EXIT: "1" },
      identity: nodeIdentity(node),
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

/** docker when asked or (auto) when an engine answers, else process; then the images that runtime needs. */
async function resolveRuntime(o: UpOptions, log: (line: string) => void): Promise<{ runtime: "docker" | "process"; summary: string }> {
  // What node-setup did, from its own log lines (pino JSON): built or imported, else the images were there.
  const did: string[] = [];
  const out = await nodeSetup(["prepare", "--runtime", o.runtime, "--images-dir", o.imagesDir], (line) => {
    log(line);
    if (line.includes("built the busybox root filesystem")) did.push("busybox root filesystem built");
    if (line.includes("imported the busybox image into docker")) did.push("busybox imported into docker");
  });
  const runtime = out.split("\n").pop()?.trim();
  if (runtime !== "docker" && runtime !== "process") throw new Error(`node setup chose no runtime (${out})`);
  return { runtime, summary: `${runtime} runtime; ${did.length > 0 ? did.join(", ") : "local images present"}` };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pid of the `choreo up` recorded in `pidFile` when it still runs (same start time), else undefined. */
function upPid(pidFile: string): number | undefined {
  const [pid, start] = readFileSync(pidFile, "utf8").trim().split(" ");
  const n = Number(pid);
  if (!Number.isInteger(n) || n <= 0 || !isAlive(n)) return undefined;
  // Recorded with its start time (since this version): a reused pid is another process.
  return !start || processStartTime(n) === start ? n : undefined;
}

/** What `choreo down` did. */
export interface DownReport {
  /** The pid of the `choreo up` it stopped, when one ran. */
  stopped?: number;
  /** What of a cluster that did not stop it found and removed (processes, containers, namespaces, veths, bridges, chains, mounts, cgroups). */
  removed: string[];
  /** What it found but could not remove. */
  remaining: string[];
}

/**
 * Stops the cluster started from `dataDir` — SIGTERM to its `choreo up`,
 * which stops everything — then sweeps what a cluster whose `choreo up` died
 * left (its recorded processes, its nodes' network, containers, mounts and
 * cgroups): also when no `choreo up` runs.
 */
export async function down(dataDir = DEFAULT_UP.dataDir, log: (line: string) => void = () => undefined): Promise<DownReport> {
  const dir = path.resolve(dataDir);
  const pidFile = path.join(dir, "up.pid");
  let stopped: number | undefined;
  const pid = existsSync(pidFile) ? upPid(pidFile) : undefined;
  if (pid) {
    process.kill(pid, "SIGTERM");
    await waitFor(() => !isAlive(pid), { timeoutMs: 90_000, intervalMs: 100, message: `choreo up (pid ${pid}) to stop` });
    stopped = pid;
  }
  const report = await sweep(dir, log);
  rmSync(pidFile, { force: true });
  return { stopped, ...report };
}
