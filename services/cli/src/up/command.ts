import { execFile } from "node:child_process";
import { mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { onAbort, signalController } from "@choreo/kit/lifecycle";
import { DEFAULT_UP, down, up, type LocalCluster } from "./cluster.js";
import { ensureDependencies } from "./dependencies.js";
import { Progress, type Step } from "./progress.js";
import { joinCommandLine, serveJoinUsers } from "../join/offer.js";
import { RestClient } from "../client.js";
import { connectionFrom, loadKubeconfig } from "../kubeconfig.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

const USAGE = `Usage: choreo up [--nodes N] [--runtime auto|docker|process] [--hollow-nodes N] [--no-examples]
                 [--data-dir DIR] [--host H] [--nats-port P] [--redis-port P] [--http-port P]
                 [--https-port P] [--grpc-port P] [--metrics-port P] [--images-dir DIR]
                 [--node-prefix P] [--cluster-cidr CIDR] [--service-cidr CIDR] [--ha [--api-replicas N]] [-q] [--install]
Brings up a local cluster in the foreground: nats-server, redis-server, the api, the scheduler,
replication and endpoints actors, N real nodes (default 2, named node-1 …; one node agent each,
running pods as docker containers when an engine answers, else as namespaced processes; node i
gets the i-th /24 of --cluster-cidr, default 10.244.0.0/16) and, with --hollow-nodes, a node agent
hosting hollow nodes. Every process is supervised: restarted (1 s, 2 s … 30 s backoff) when it
dies. Builds the small local images it needs (no registry), then applies examples/ (a web app
behind a NodePort Service, a sidecar pod). Ctrl-C, SIGTERM or choreo down stops it and leaves no
processes, containers, namespaces, veths, bridges, firewall rules, mounts or cgroups behind.
--ha: no single server — 3 nats-servers (event stream R3), a Redis primary + 2 replicas + 3
Sentinels (writes answered once the event log holds them), --api-replicas api replicas (default 3)
behind HAProxy on the https, http and gRPC ports (kubectl keeps working when one dies); every one
supervised. --nats-port and --redis-port are then not used.
Shows each step as it goes (dependencies, bus and store, api, images, each actor, nodes Ready,
examples): on a terminal one line per step redrawn in place, elsewhere one plain line per step
with its duration; -q, --quiet shows none (the summary stays). --install (npm start): the first
step runs scripts/ensure-deps.sh (OS packages, Docker, npm dependencies, local images); without
it, only when a command choreo up needs is missing. Logs: <data-dir>/logs (up.log is
choreo up's own; also on stderr when stderr is not a terminal).

Usage: choreo down [--data-dir DIR]
Stops the cluster of DIR (default .choreo); when its choreo up died (kill -9, a crash), removes what
that cluster left — its processes, and its nodes' containers, namespaces, veths, bridges, firewall
chains, mounts and cgroups — and says what it removed.`;

function port(v: string | undefined, dflt: number, name: string): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`--${name} must be a port number, got ${v}`);
  return n;
}

function replicas(v: string | undefined): number {
  if (v === undefined) return DEFAULT_UP.apiReplicas;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 9) throw new Error(`--api-replicas must be 1 to 9, got ${v}`);
  return n;
}

/** Where `choreo up` writes: its stream (a terminal or not) and the environment. */
export interface UpTerminal {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** `choreo up`: runs until SIGINT/SIGTERM. `term` is stdout (progress is drawn in place when it is a terminal). */
export async function upCommand(
  argv: string[],
  out: (s: string) => void = console.log,
  term: UpTerminal = process.stdout,
  env: Record<string, string | undefined> = process.env,
): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      "data-dir": { type: "string" },
      host: { type: "string" },
      "nats-port": { type: "string" },
      "redis-port": { type: "string" },
      "http-port": { type: "string" },
      "https-port": { type: "string" },
      "grpc-port": { type: "string" },
      "metrics-port": { type: "string" },
      "hollow-nodes": { type: "string" },
      nodes: { type: "string" },
      runtime: { type: "string" },
      "images-dir": { type: "string" },
      "node-prefix": { type: "string" },
      "cluster-cidr": { type: "string" },
      "service-cidr": { type: "string" },
      "no-examples": { type: "boolean" },
      ha: { type: "boolean" },
      "api-replicas": { type: "string" },
      quiet: { type: "boolean", short: "q" },
      install: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    out(USAGE);
    return 0;
  }
  const runtime = values.runtime ?? DEFAULT_UP.runtime;
  if (runtime !== "auto" && runtime !== "docker" && runtime !== "process") throw new Error(`--runtime must be auto, docker or process, not ${runtime}`);
  const nodePrefix = values["node-prefix"] ?? DEFAULT_UP.nodePrefix;
  // A node name is a DNS-1123 subdomain; the agent's names (bridges, chains) derive from it.
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9-])?$/.test(nodePrefix)) throw new Error(`--node-prefix must be lower-case letters, digits, '-' or '.', got ${nodePrefix}`);
  const dataDir = path.resolve(values["data-dir"] ?? DEFAULT_UP.dataDir);
  const nodes = port(values.nodes, DEFAULT_UP.nodes, "nodes");
  const hollowNodes = port(values["hollow-nodes"], DEFAULT_UP.hollowNodes, "hollow-nodes");
  const progress = new Progress({
    write: (t) => void term.write(t),
    tty: term.isTTY === true && env["TERM"] !== "dumb",
    quiet: values.quiet === true,
    ...(term.columns ? { columns: term.columns } : {}),
  });
  // The first Ctrl-C stops the cluster; a second one exits at once (what is left: choreo down).
  const ac = signalController();
  let cluster: LocalCluster;
  try {
    mkdirSync(path.join(dataDir, "logs"), { recursive: true });
    await progress.run(
      "dependencies",
      (step) =>
        ensureDependencies({
          ha: values.ha ?? false,
          nodes,
          logFile: path.join(dataDir, "logs", "install.log"),
          install: values.install === true,
          onProgress: (what) => step.update(what),
        }),
      (r) =>
        r.installed.length > 0
          ? `installed ${r.installed.join(", ")}; present: ${r.present.join(", ")}`
          : `present: ${r.present.join(", ")}${values.install ? "; Docker, the web view bundle and the local images checked" : ""}`,
    );
    cluster = await up(
      {
        dataDir,
        host: values.host ?? DEFAULT_UP.host,
        natsPort: port(values["nats-port"], DEFAULT_UP.natsPort, "nats-port"),
        redisPort: port(values["redis-port"], DEFAULT_UP.redisPort, "redis-port"),
        httpPort: port(values["http-port"], DEFAULT_UP.httpPort, "http-port"),
        httpsPort: port(values["https-port"], DEFAULT_UP.httpsPort, "https-port"),
        grpcPort: port(values["grpc-port"], DEFAULT_UP.grpcPort, "grpc-port"),
        metricsPort: port(values["metrics-port"], DEFAULT_UP.metricsPort, "metrics-port"),
        hollowNodes,
        nodes,
        nodePrefix,
        clusterCidr: values["cluster-cidr"] ?? DEFAULT_UP.clusterCidr,
        serviceCidr: values["service-cidr"],
        runtime,
        imagesDir: values["images-dir"] ?? DEFAULT_UP.imagesDir,
        examples: !values["no-examples"],
        ha: values.ha ?? false,
        apiReplicas: replicas(values["api-replicas"]),
      },
      progress,
      ac.signal,
    );
  } catch (err) {
    progress.close();
    // Interrupted while starting: up() stopped what it had started.
    if (ac.signal.aborted) {
      out("stopped");
      return 130;
    }
    throw err;
  }
  const o = cluster.opts;
  // choreo join elsewhere: this process owns nats-server's users and adds each joining node's; a first bootstrap token.
  let join: string;
  try {
    await serveJoinUsers(cluster.nats, ac.signal);
    const line = await joinCommandLine({ server: `https://${o.host}:${o.httpsPort}`, adminToken: cluster.token, dataDir: o.dataDir });
    join = `To add a node from another machine (the token expires in 24 h; more with choreo token create):\n  ${line}`;
  } catch (err) {
    join = `choreo join is not offered: ${(err as Error).message}`;
  }
  const expected = (cluster.runtime ? o.nodes : 0) + o.hollowNodes;
  if (expected > 0 && !ac.signal.aborted)
    await progress
      .run(
        "nodes Ready",
        (step) => nodesReady(cluster.kubeconfig, expected, step, ac.signal),
        (n) => `${n}/${expected}`,
      )
      .catch(() => undefined);
  const examples =
    o.examples && o.nodes > 0 && !ac.signal.aborted
      ? await progress.run(
          "examples applied",
          (step) => applyExamples(cluster.kubeconfig, step, ac.signal),
          (x) => x.detail,
        )
      : undefined;
  progress.close();
  out(`choreo is up.
  API (https, kubectl): https://${o.host}:${o.httpsPort}
  API (http):           http://${o.host}:${o.httpPort}
  gRPC:                 ${o.host}:${o.grpcPort}
  NATS (event log):     ${cluster.nats.address}   stream CHOREO_EVENTS${o.ha ? " (3 replicas)" : ""}${
    o.ha && "sentinels" in cluster.redis
      ? `
  Redis (Sentinels):    ${cluster.redis.url}   writes answered once the event log holds them
  api replicas:         ${cluster.apis().length} behind HAProxy (${cluster.haproxy?.configFile ?? ""})`
      : ""
  }
  credentials (0600):   ${cluster.nats.credentialsFile} (NATS), ${cluster.redis.credentialsFile} (Redis)
  subscriber (0600):    ${cluster.subscriberCredentials} (NATS, read-only: the event log; choreo events finds it through the kubeconfig)
  actors:               ${cluster.actors().join(", ") || "(none yet)"}
  nodes:                ${o.nodes ? `${o.nodes} × ${cluster.runtime} runtime` : "none"}${o.hollowNodes ? ` + ${o.hollowNodes} hollow` : ""}
  kubeconfig:           ${cluster.kubeconfig}

  export KUBECONFIG=${cluster.kubeconfig}
  kubectl get namespaces        # or: choreo get namespaces
  choreo events -w              # the event log, one line per change
Logs in ${o.dataDir}/logs (choreo up's own: up.log). Ctrl-C (or choreo down) stops the cluster; data stays in ${o.dataDir}.
${join}`);
  if (examples) out(examples.text);
  await new Promise<void>((resolve) => onAbort(ac.signal, resolve));
  out("stopping…");
  await cluster.stop();
  out("stopped");
  return 0;
}

/** Waits until `expected` nodes are Ready (the step shows n/N); resolves with how many are, rejects after 2 minutes. */
async function nodesReady(kubeconfig: string, expected: number, step: Step, signal: AbortSignal): Promise<number> {
  const client = new RestClient(connectionFrom(loadKubeconfig([kubeconfig])));
  let ready = 0;
  const deadline = Date.now() + 120_000;
  while (!signal.aborted) {
    try {
      const list = await client.json<{ items?: { status?: { conditions?: { type?: string; status?: string }[] } }[] }>({ path: "/api/v1/nodes", signal });
      ready = (list.items ?? []).filter((n) => n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")).length;
    } catch {
      // the api may be restarting: asked again
    }
    step.update(`${ready}/${expected}`);
    if (ready >= expected) return ready;
    if (Date.now() > deadline) throw new Error(`${ready}/${expected} after 2 minutes (kubectl describe nodes)`);
    await new Promise((res) => setTimeout(res, 500));
  }
  return ready;
}

/**
 * Applies examples/*.yaml with choreo itself (the user's path), waits until
 * the web app answers through its NodePort; `text` says what was applied and
 * how to reach the app.
 */
async function applyExamples(kubeconfig: string, step: Step, signal: AbortSignal): Promise<{ detail: string; text: string }> {
  const choreo = path.join(ROOT, "services/cli/bin/choreo.js");
  const files = readdirSync(path.join(ROOT, "examples"))
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .flatMap((f) => ["-f", path.join(ROOT, "examples", f)]);
  const applied = await new Promise<{ ok: boolean; text: string }>((resolve) => {
    execFile(process.execPath, [choreo, "apply", "--kubeconfig", kubeconfig, ...files], (err, stdout, stderr) =>
      resolve(err ? { ok: false, text: `examples: ${stderr.trim()}` } : { ok: true, text: stdout.trim() }),
    );
  });
  const objects = applied.text.split("\n").filter((l) => / (created|configured|unchanged)$/.test(l)).length;
  step.update(`${objects} objects; waiting for the web app on http://127.0.0.1:30080/`);
  let answer = "";
  for (let i = 0; i < 120 && !answer && !signal.aborted; i++) {
    try {
      const r = await fetch("http://127.0.0.1:30080/", { signal: AbortSignal.timeout(1_000) });
      if (r.ok) answer = (await r.text()).trim();
    } catch {
      await new Promise((res) => setTimeout(res, 1_000));
    }
  }
  if (!applied.ok) step.fail(applied.text.split("\n")[0] ?? "apply failed");
  return {
    detail: `${objects} objects; ${answer ? "the web app answers on http://127.0.0.1:30080/" : "the web app is still starting"}`,
    text: `${applied.text}
${answer ? `The web app answers through its Service: curl http://127.0.0.1:30080/ → ${answer}` : "The web app is starting: curl http://127.0.0.1:30080/"}
  choreo get pods -o wide --kubeconfig ${kubeconfig}
  kubectl logs sidecar -c reader -f`,
  };
}

/** `choreo down`: stops the cluster, and removes what one whose `choreo up` died left. */
export async function downCommand(argv: string[], out: (s: string) => void = console.log): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { "data-dir": { type: "string" }, help: { type: "boolean", short: "h" } } });
  if (values.help) {
    out(USAGE.slice(USAGE.indexOf("Usage: choreo down")));
    return 0;
  }
  const dataDir = path.resolve(values["data-dir"] ?? DEFAULT_UP.dataDir);
  // node-setup's own log lines (pino JSON) go where choreo up's go: stderr.
  const report = await down(dataDir, (line) => process.stderr.write(`${line}\n`));
  if (report.stopped) out(`choreo stopped (choreo up, pid ${report.stopped})`);
  if (report.removed.length > 0) out([`removed what a cluster that did not stop left (${dataDir}):`, ...report.removed.map((x) => `  ${x}`)].join("\n"));
  if (report.remaining.length > 0) out([`could not remove:`, ...report.remaining.map((x) => `  ${x}`)].join("\n"));
  if (!report.stopped && report.removed.length === 0 && report.remaining.length === 0) out(`no cluster is running from ${dataDir}; nothing of one is left`);
  return report.remaining.length > 0 ? 1 : 0;
}
