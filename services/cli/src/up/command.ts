import { parseArgs } from "node:util";
import { signalController } from "@choreo/kit/lifecycle";
import { DEFAULT_UP, down, up } from "./cluster.js";

const USAGE = `Usage: choreo up [--data-dir DIR] [--host H] [--nats-port P] [--redis-port P] [--http-port P] [--https-port P] [--grpc-port P] [--metrics-port P] [--hollow-nodes N]
Brings up a local cluster (nats-server, redis-server, the api, and the actors present: scheduler,
replication, endpoints, a node agent hosting N hollow nodes; metrics ports follow --metrics-port)
in the foreground; Ctrl-C stops it.`;

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
      "data-dir": { type: "string" }, host: { type: "string" }, "nats-port": { type: "string" }, "redis-port": { type: "string" },
      "http-port": { type: "string" }, "https-port": { type: "string" }, "grpc-port": { type: "string" }, "metrics-port": { type: "string" },
      "hollow-nodes": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    out(USAGE);
    return 0;
  }
  const ac = signalController();
  const cluster = await up({
    dataDir: values["data-dir"] ?? DEFAULT_UP.dataDir,
    host: values.host ?? DEFAULT_UP.host,
    natsPort: port(values["nats-port"], DEFAULT_UP.natsPort, "nats-port"),
    redisPort: port(values["redis-port"], DEFAULT_UP.redisPort, "redis-port"),
    httpPort: port(values["http-port"], DEFAULT_UP.httpPort, "http-port"),
    httpsPort: port(values["https-port"], DEFAULT_UP.httpsPort, "https-port"),
    grpcPort: port(values["grpc-port"], DEFAULT_UP.grpcPort, "grpc-port"),
    metricsPort: port(values["metrics-port"], DEFAULT_UP.metricsPort, "metrics-port"),
    hollowNodes: port(values["hollow-nodes"], DEFAULT_UP.hollowNodes, "hollow-nodes"),
  }, out);
  const o = cluster.opts;
  out(`choreo is up.
  API (https, kubectl): https://${o.host}:${o.httpsPort}
  API (http):           http://${o.host}:${o.httpPort}
  gRPC:                 ${o.host}:${o.grpcPort}
  NATS (event log):     nats://127.0.0.1:${o.natsPort}   stream CHOREO_EVENTS
  actors:               ${cluster.actors().join(", ") || "(none yet)"}
  kubeconfig:           ${cluster.kubeconfig}

  export KUBECONFIG=${cluster.kubeconfig}
  kubectl get namespaces        # or: choreo get namespaces
Logs in ${o.dataDir}/logs. Ctrl-C (or choreo down) stops the cluster; data stays in ${o.dataDir}.`);
  await new Promise<void>((resolve) => ac.signal.addEventListener("abort", () => resolve(), { once: true }));
  out("stopping…");
  await cluster.stop();
  out("stopped");
  return 0;
}

/** `choreo down`. */
export async function downCommand(argv: string[], out: (s: string) => void = console.log): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { "data-dir": { type: "string" } } });
  const stopped = await down(values["data-dir"] ?? DEFAULT_UP.dataDir);
  out(stopped ? "choreo stopped" : "no cluster is running");
  return 0;
}
