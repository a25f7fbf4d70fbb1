import { execFile } from "node:child_process";
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { signalController } from "@choreo/kit/lifecycle";
import { DEFAULT_UP, down, up } from "./cluster.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

const USAGE = `Usage: choreo up [--nodes N] [--runtime auto|docker|process] [--hollow-nodes N] [--no-examples]
                 [--data-dir DIR] [--host H] [--nats-port P] [--redis-port P] [--http-port P]
                 [--https-port P] [--grpc-port P] [--metrics-port P] [--images-dir DIR]
Brings up a local cluster in the foreground: nats-server, redis-server, the api, the scheduler,
replication and endpoints actors, N real nodes (default 2; one node agent each, running pods as
docker containers when an engine answers, else as namespaced processes) and, with --hollow-nodes,
a node agent hosting hollow nodes. Builds the small local images it needs (no registry), then
applies examples/ (a web app behind a NodePort Service, a sidecar pod). Ctrl-C or choreo down
stops it and leaves no containers, namespaces, veths or firewall rules behind.`;

function port(v: string | undefined, dflt: number, name: string): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`--${name} must be a port number, got ${v}`);
  return n;
}

/** `choreo up`: runs until SIGINT/SIGTERM. */
export async function upCommand(argv: string[], out: (s: string) => void = console.log): Promise<number> {
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
      "no-examples": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    out(USAGE);
    return 0;
  }
  const runtime = values.runtime ?? DEFAULT_UP.runtime;
  if (runtime !== "auto" && runtime !== "docker" && runtime !== "process") throw new Error(`--runtime must be auto, docker or process, not ${runtime}`);
  const ac = signalController();
  const cluster = await up(
    {
      dataDir: values["data-dir"] ?? DEFAULT_UP.dataDir,
      host: values.host ?? DEFAULT_UP.host,
      natsPort: port(values["nats-port"], DEFAULT_UP.natsPort, "nats-port"),
      redisPort: port(values["redis-port"], DEFAULT_UP.redisPort, "redis-port"),
      httpPort: port(values["http-port"], DEFAULT_UP.httpPort, "http-port"),
      httpsPort: port(values["https-port"], DEFAULT_UP.httpsPort, "https-port"),
      grpcPort: port(values["grpc-port"], DEFAULT_UP.grpcPort, "grpc-port"),
      metricsPort: port(values["metrics-port"], DEFAULT_UP.metricsPort, "metrics-port"),
      hollowNodes: port(values["hollow-nodes"], DEFAULT_UP.hollowNodes, "hollow-nodes"),
      nodes: port(values.nodes, DEFAULT_UP.nodes, "nodes"),
      runtime,
      imagesDir: values["images-dir"] ?? DEFAULT_UP.imagesDir,
      examples: !values["no-examples"],
    },
    out,
  );
  const o = cluster.opts;
  out(`choreo is up.
  API (https, kubectl): https://${o.host}:${o.httpsPort}
  API (http):           http://${o.host}:${o.httpPort}
  gRPC:                 ${o.host}:${o.grpcPort}
  NATS (event log):     nats://127.0.0.1:${o.natsPort}   stream CHOREO_EVENTS
  credentials (0600):   ${cluster.nats.credentialsFile} (NATS), ${cluster.redis.credentialsFile} (Redis)
  actors:               ${cluster.actors().join(", ") || "(none yet)"}
  nodes:                ${o.nodes ? `${o.nodes} × ${cluster.runtime} runtime` : "none"}${o.hollowNodes ? ` + ${o.hollowNodes} hollow` : ""}
  kubeconfig:           ${cluster.kubeconfig}

  export KUBECONFIG=${cluster.kubeconfig}
  kubectl get namespaces        # or: choreo get namespaces
Logs in ${o.dataDir}/logs. Ctrl-C (or choreo down) stops the cluster; data stays in ${o.dataDir}.`);
  if (o.examples && o.nodes > 0) out(await applyExamples(cluster.kubeconfig));
  await new Promise<void>((resolve) => ac.signal.addEventListener("abort", () => resolve(), { once: true }));
  out("stopping…");
  await cluster.stop();
  out("stopped");
  return 0;
}

/**
 * Applies examples/*.yaml with choreo itself (the user's path), waits until
 * the web app answers through its NodePort, and says how to reach it.
 */
async function applyExamples(kubeconfig: string): Promise<string> {
  const choreo = path.join(ROOT, "services/cli/bin/choreo.js");
  const files = readdirSync(path.join(ROOT, "examples"))
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .flatMap((f) => ["-f", path.join(ROOT, "examples", f)]);
  const applied = await new Promise<string>((resolve) => {
    execFile(process.execPath, [choreo, "apply", "--kubeconfig", kubeconfig, ...files], (err, stdout, stderr) =>
      resolve(err ? `examples: ${stderr.trim()}` : stdout.trim()),
    );
  });
  let answer = "";
  for (let i = 0; i < 120 && !answer; i++) {
    try {
      const r = await fetch("http://127.0.0.1:30080/", { signal: AbortSignal.timeout(1_000) });
      if (r.ok) answer = (await r.text()).trim();
    } catch {
      await new Promise((res) => setTimeout(res, 1_000));
    }
  }
  return `${applied}
${answer ? `The web app answers through its Service: curl http://127.0.0.1:30080/ → ${answer}` : "The web app is starting: curl http://127.0.0.1:30080/"}
  choreo get pods -o wide --kubeconfig ${kubeconfig}
  kubectl logs sidecar -c reader -f`;
}

/** `choreo down`. */
export async function downCommand(argv: string[], out: (s: string) => void = console.log): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { "data-dir": { type: "string" } } });
  const stopped = await down(values["data-dir"] ?? DEFAULT_UP.dataDir);
  out(stopped ? "choreo stopped" : "no cluster is running");
  return 0;
}
