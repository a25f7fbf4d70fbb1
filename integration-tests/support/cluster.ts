import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectBus, eventKeyPaths } from "@choreo/kit/bus";
import {
  actorIdentity,
  ensureTokenFile,
  hollowNodesIdentity,
  NATS_CA_ENV,
  identityNatsPermissions,
  natsUserName,
  nodeIdentity,
  provisionIdentity,
  type Identity,
} from "@choreo/kit/secrets";
import { ApiClient } from "@choreo/kit/client";
import { Informer } from "@choreo/kit/informer";
import { silentLogger } from "@choreo/kit/log";
import { jetstreamManager } from "@nats-io/jetstream";
import {
  freePort,
  startNats,
  startNatsCluster,
  startProcess,
  startRedis,
  waitFor,
  type ManagedProcess,
  type NatsClusterHandle,
  type ServerHandle,
} from "@choreo/kit/testing";
import { API_NODE_FLAGS, NODE_FLAGS } from "@choreo/kit/process";
import { metaOf, unwrap } from "@choreo/kit";
import type { Endpoints } from "@choreo/kit/gen/choreo/core/v1/core";

/** The repository root. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** One api replica started as its own process. */
export interface ApiProcess {
  index: number;
  httpPort: number;
  httpsPort: number;
  grpcPort: number;
  metricsPort: number;
  process: ManagedProcess;
}

/** nats-server, redis-server and N api processes, with a client. */
export interface TestCluster {
  dir: string;
  /** nats-server, or the NATS cluster as one (its url lists every member). */
  nats: ServerHandle;
  /** The NATS cluster when started with `natsCluster` (its members: kill one, restart it). */
  natsCluster?: NatsClusterHandle;
  redis: ServerHandle;
  apis: ApiProcess[];
  nc: NatsConnection;
  client: ApiClient;
  token: string;
  /** http://127.0.0.1:<port> of api 0. */
  httpUrl: string;
  httpsUrl: string;
  /** Actor processes by name (scheduler, replication, endpoints, node-agent). */
  actors: Map<string, ManagedProcess>;
  /** Starts (or restarts) an actor process: services/<name>/src/main.ts, known in `actors` as `as` (default: its name). */
  /**
   * Starts an actor (again). `place`: in a test host's network namespace
   * (`test-hosts.ts`), its metrics on the host's address — the cluster must
   * have been started with `natsHost` on the hosts' network.
   */
  startActor(name: string, env?: Record<string, string>, args?: string[], as?: string, place?: ActorPlace): Promise<ManagedProcess>;
  /** kill -9 api i. */
  killApi(i: number): Promise<void>;
  /** Starts api i again (same ports) and waits until it answers. */
  startApi(i: number, env?: Record<string, string>): Promise<void>;
  /**
   * Stops every process, then runs `beforeRemove` (e.g. a node clean-up that
   * needs the state directory and must unmount what a killed agent left
   * mounted in it), then removes the directory.
   */
  stop(beforeRemove?: () => void | Promise<void>): Promise<void>;
  /** The last `lines` lines of every process's log (api, actors, node agents): what a failed scenario's message carries. */
  logTails(lines?: number): string;
}

/** Where an actor runs when not on this machine's network: a test host (`test-hosts.ts`). */
export interface ActorPlace {
  /** The network namespace (under /run/netns). */
  netns: string;
  /** Its address, where its metrics listen. */
  address: string;
}

async function answers(client: ApiClient): Promise<boolean> {
  try {
    await client.get("namespaces", "", "default");
    return true;
  } catch {
    return false;
  }
}

/**
 * Waits for what the api writes by itself once it is up — the `kubernetes`
 * Service's Endpoints and kube-root-ca.crt in every namespace — so that a
 * test measuring the revision ("bad input changes nothing") does not see
 * them land under it.
 */
async function apiWritersSettled(client: ApiClient, httpsPorts: number[]): Promise<void> {
  await waitFor(
    async () => {
      try {
        // Every replica listed (each adds itself: the Endpoints change until the last one has).
        const ep = unwrap(await client.get("endpoints", "default", "kubernetes")) as Endpoints;
        const ports = new Set(ep.subsets.flatMap((s) => s.ports.map((p) => p.port)));
        if (ep.subsets.length > 0 && !httpsPorts.every((p) => ports.has(p))) return false;
        for (const ns of (await client.list("namespaces")).items) await client.get("configmaps", metaOf(ns).name, "kube-root-ca.crt");
        return true;
      } catch {
        return false;
      }
    },
    { timeoutMs: 30_000, message: "the api's kubernetes Endpoints and kube-root-ca.crt maps" },
  );
}

async function healthz(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1_000) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

/** Node flags for an actor's process: kit's NODE_FLAGS, then CHOREO_<NAME>_NODE_ARGS (space-separated; `node-agent` → CHOREO_NODE_AGENT_NODE_ARGS). */
function actorNodeArgs(name: string): string[] {
  return [...NODE_FLAGS, ...(process.env[`CHOREO_${name.toUpperCase().replace(/-/g, "_")}_NODE_ARGS`] ?? "").split(" ").filter(Boolean)];
}

/**
 * Starts a cluster for an integration test. `env` goes to every api process.
 * CHOREO_API_NODE_ARGS (space-separated) adds node flags to every api process,
 * e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it under a benchmark
 * (the profile is written when the api exits on its stop). CHOREO_<ACTOR>_NODE_ARGS
 * does the same for one actor, e.g. CHOREO_NODE_AGENT_NODE_ARGS for the node-agent.
 */
export async function startCluster(
  opts: {
    apis?: number;
    env?: Record<string, string>;
    actors?: { name: string; env?: Record<string, string>; args?: string[]; as?: string }[];
    /** A NATS cluster of this many servers instead of one nats-server (each member's log is `nats-<i>.log`). */
    natsCluster?: number;
    /** The address nats-server listens on (default loopback): a test hosts' network's gateway, with TLS (`test-hosts.ts`). */
    natsHost?: string;
  } = {},
): Promise<TestCluster> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "choreo-it-"));
  // What is started so far: a failed start stops it all, or its processes would keep the test file alive until its timeout.
  const started: { stop(): Promise<unknown> }[] = [];
  try {
    return await bringUp(dir, opts, started);
  } catch (err) {
    for (const s of started.reverse()) await s.stop().catch(() => undefined);
    removeUnlessKept(dir);
    throw err;
  }
}

async function bringUp(dir: string, opts: Parameters<typeof startCluster>[0] & object, started: { stop(): Promise<unknown> }[]): Promise<TestCluster> {
  const natsCluster = opts.natsCluster
    ? await startNatsCluster({ size: opts.natsCluster, dir: path.join(dir, "nats"), logDir: dir, ...(opts.natsHost ? { host: opts.natsHost } : {}) })
    : undefined;
  if (natsCluster) started.push(natsCluster);
  const [nats, redis] = await Promise.all([
    natsCluster ?? startNats({ dir: path.join(dir, "nats"), ...(opts.natsHost ? { host: opts.natsHost } : {}) }).then((s) => (started.push(s), s)),
    startRedis({ dir: path.join(dir, "redis") }).then((s) => (started.push(s), s)),
  ]);
  // nats-server beyond loopback speaks TLS only: every process verifies it with its CA.
  const natsCa = "caFile" in nats && nats.caFile ? { [NATS_CA_ENV]: nats.caFile } : {};
  const nc = await connectBus(nats.url, "integration-test", undefined, natsCa[NATS_CA_ENV]);
  started.push({ stop: () => nc.close() });
  // The api's token file, provisioned before it starts: its first line is the administrator (the test's own token).
  const apiTokenFile = path.join(dir, "api", "tokens");
  const token = ensureTokenFile(apiTokenFile);
  const probe = new ApiClient(nc, { timeoutMs: 1_000, token });
  const client = new ApiClient(nc, { timeoutMs: 15_000, token });
  const apis: ApiProcess[] = [];
  for (let i = 0; i < (opts.apis ?? 1); i++) {
    apis.push({
      index: i,
      httpPort: await freePort(),
      httpsPort: await freePort(),
      grpcPort: await freePort(),
      metricsPort: await freePort(),
      process: undefined as unknown as ManagedProcess,
    });
  }
  const launch = async (a: ApiProcess, env: Record<string, string> = {}): Promise<void> => {
    a.process = await startProcess({
      name: `api-${a.index}`,
      cmd: process.execPath,
      args: [
        ...API_NODE_FLAGS,
        ...(process.env.CHOREO_API_NODE_ARGS ?? "").split(" ").filter(Boolean),
        "--import",
        "tsx",
        path.join(ROOT, "services/api/src/main.ts"),
      ],
      cwd: ROOT,
      env: {
        CHOREO_NATS_URL: nats.url,
        ...natsCa,
        CHOREO_REDIS_URL: redis.url,
        CHOREO_DATA_DIR: path.join(dir, "api"),
        CHOREO_API_HTTP_PORT: String(a.httpPort),
        CHOREO_API_HTTPS_PORT: String(a.httpsPort),
        CHOREO_API_GRPC_PORT: String(a.grpcPort),
        CHOREO_API_METRICS_PORT: String(a.metricsPort),
        CHOREO_REPLICA_ID: `api-${a.index}`,
        CHOREO_LOG_LEVEL: process.env.CHOREO_LOG_LEVEL ?? "warn",
        // Off unless a scenario asks (as Kubernetes' integration framework): most clusters here run no replication actor to make `default` accounts.
        CHOREO_SERVICE_ACCOUNT_ADMISSION: "0",
        ...opts.env,
        ...env,
      },
      // This replica's gateway is up and the api answers over NATS.
      readyCheck: async () => (await healthz(a.httpPort)) && (await answers(probe)),
      timeoutMs: 60_000,
      logFile: path.join(dir, `api-${a.index}.log`),
    });
  };
  // The first replica creates the token file and certificate; the others reuse them.
  for (const a of apis) {
    // Another test file may have taken a port between freePort and the listen: new ports, once more (a restart keeps its ports).
    await retryOnPortClash(
      () => launch(a),
      async () => {
        a.httpPort = await freePort();
        a.httpsPort = await freePort();
        a.grpcPort = await freePort();
        a.metricsPort = await freePort();
      },
    );
    started.push({ stop: () => a.process.stop(10_000) });
  }
  if (apis.length > 0)
    await apiWritersSettled(
      client,
      apis.map((a) => a.httpsPort),
    );
  const actors = new Map<string, ManagedProcess>();
  const startActor = async (name: string, env: Record<string, string> = {}, args: string[] = [], as = name, place?: ActorPlace): Promise<ManagedProcess> => {
    await actors.get(as)?.stop(5_000);
    let metricsPort = env["CHOREO_METRICS_PORT"] ? Number(env["CHOREO_METRICS_PORT"]) : await freePort();
    // Each actor its own identity: a token line in the api's file, the token in a 0600 file named by CHOREO_API_TOKEN_FILE.
    const identity = identityOf(name, { ...opts.env, ...env }, args);
    const tokenFile = path.join(dir, "identities", `${as}.token`);
    if (identity) provisionIdentity(apiTokenFile, tokenFile, identity);
    // And its own NATS user: what it may publish and hear (a node agent its node's subjects only).
    const bus = identity
      ? { CHOREO_NATS_URL: nats.address, CHOREO_NATS_CREDENTIALS: await nats.addUser(natsUserName(as), identityNatsPermissions(identity)) }
      : {};
    const start = (): Promise<ManagedProcess> =>
      startProcess({
        name,
        // nsenter enters the network namespace only and execs node: the same pid (a kill -9 reaches the actor).
        cmd: place ? "nsenter" : process.execPath,
        args: [
          ...(place ? [`--net=/run/netns/${place.netns}`, process.execPath] : []),
          ...actorNodeArgs(name),
          "--import",
          "tsx",
          path.join(ROOT, `services/${name}/src/main.ts`),
          ...args,
        ],
        cwd: ROOT,
        env: {
          CHOREO_NATS_URL: nats.url,
          ...natsCa,
          ...(place ? { CHOREO_METRICS_HOST: place.address } : {}),
          CHOREO_LOG_LEVEL: "info",
          CHOREO_EVENT_VERIFY_KEY: eventKeyPaths(path.join(dir, "api", "pki")).publicKey,
          ...(identity ? { CHOREO_API_TOKEN_FILE: tokenFile } : {}),
          ...bus,
          ...opts.env,
          ...env,
          CHOREO_METRICS_PORT: String(metricsPort),
        },
        readyUrl: `http://${place?.address ?? "127.0.0.1"}:${metricsPort}/healthz`,
        timeoutMs: 60_000,
        logFile: path.join(dir, `${as}.log`),
      });
    const p = env["CHOREO_METRICS_PORT"]
      ? await start()
      : await retryOnPortClash(start, async () => {
          metricsPort = await freePort();
        });
    actors.set(as, p);
    return p;
  };
  started.push({ stop: () => Promise.all([...actors.values()].map((p) => p.stop(5_000))) });
  for (const a of opts.actors ?? []) await startActor(a.name, a.env, a.args, a.as);
  return {
    dir,
    nats,
    natsCluster,
    redis,
    apis,
    nc,
    client,
    token,
    actors,
    startActor,
    httpUrl: `http://127.0.0.1:${apis[0]?.httpPort}`,
    httpsUrl: `https://127.0.0.1:${apis[0]?.httpsPort}`,
    killApi: async (i) => apis[i]?.process.kill(),
    startApi: async (i, env) => {
      const a = apis[i];
      if (a) await launch(a, env);
    },
    logTails: (lines = 30) => logTails(dir, lines),
    async stop(beforeRemove) {
      await Promise.all([...actors.values()].map((p) => p.stop(5_000)));
      await Promise.all(apis.map((a) => a.process?.stop(10_000)));
      await nc.close().catch(() => undefined);
      await Promise.all([nats.stop(), redis.stop()]);
      await beforeRemove?.();
      removeUnlessKept(dir);
    },
  };
}

/**
 * Who an actor started by name is: scheduler, replication and endpoints
 * their users; a node agent `system:node:<its node>` (--node-name or
 * CHOREO_NODE_NAME), a hollow-nodes process one `system:nodes` identity for
 * all its nodes; anything else none.
 */
function identityOf(name: string, env: Record<string, string>, args: string[]): Identity | undefined {
  if (name !== "node-agent") return actorIdentity(name);
  const arg = (flag: string): string | undefined => {
    const i = args.findIndex((a) => a === flag || a.startsWith(`${flag}=`));
    if (i === -1) return undefined;
    return args[i]!.includes("=") ? args[i]!.slice(flag.length + 1) : args[i + 1];
  };
  if (Number(arg("--hollow-nodes") ?? env["CHOREO_HOLLOW_NODES"] ?? 0) > 0)
    return hollowNodesIdentity(arg("--node-name-prefix") ?? env["CHOREO_NODE_NAME_PREFIX"] ?? "hollow-");
  return nodeIdentity(arg("--node-name") ?? env["CHOREO_NODE_NAME"] ?? os.hostname().toLowerCase());
}

/** CHOREO_IT_KEEP=1 keeps a cluster's directory (every process's log) for a post-mortem; its path is printed. */
function removeUnlessKept(dir: string): void {
  if (process.env.CHOREO_IT_KEEP) {
    console.error(`choreo test cluster kept: ${dir}`);
    return;
  }
  rmSync(dir, { recursive: true, force: true });
}

/** The tail of each `*.log` in `dir`, headed by its name. */
export function logTails(dir: string, lines: number): string {
  const out: string[] = [];
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith(".log"))
    .sort()) {
    let text = "";
    try {
      text = readFileSync(path.join(dir, f), "utf8");
    } catch {
      continue;
    }
    const tail = text.trimEnd().split("\n").slice(-lines).map(compactLogLine);
    out.push(`--- ${f} (last ${tail.length} lines)`, ...tail);
  }
  return out.join("\n");
}

/** Runs `fn`; a failure's message gains the cluster's log tails (a scenario's post-mortem in the test report itself). */
export async function withLogsOnFailure<T>(c: Pick<TestCluster, "logTails">, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof Error) err.message += `\n${c.logTails()}`;
    throw err;
  }
}

/** A pino line as `time level msg {fields} err: message` (no stacks), anything else cut to 300 characters. */
function compactLogLine(line: string): string {
  try {
    const { time, level, msg, err, service: _s, pid: _p, hostname: _h, ...fields } = JSON.parse(line) as Record<string, unknown>;
    const e = err && typeof err === "object" ? ` err: ${String((err as { message?: unknown }).message)}` : "";
    return `${String(time).slice(11)} ${String(level)} ${String(msg)} ${JSON.stringify(fields)}${e}`.slice(0, 400);
  } catch {
    return line.slice(0, 300);
  }
}

/** An informer on the cluster's pods in namespace default, not yet started: add handlers, then start it. */
export async function podInformer(c: Pick<TestCluster, "client" | "nc">): Promise<Informer<"pod">> {
  return new Informer<"pod">({ client: c.client, nc: c.nc, jsm: await jetstreamManager(c.nc), kind: "pod", namespace: "default", log: silentLogger() });
}

/**
 * Runs `start`; when it failed because a port was taken (EADDRINUSE: another
 * test file listened on it between freePort and the listen), picks new ports
 * with `repick` and tries again, up to three times.
 */
async function retryOnPortClash<T>(start: () => Promise<T>, repick: () => Promise<void>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= 3 || !String((err as Error).message).includes("EADDRINUSE")) throw err;
      await repick();
    }
  }
}
