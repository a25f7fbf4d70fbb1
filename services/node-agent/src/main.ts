// The node agent: config → NATS → ApiClient → one real node (docker or
// process runtime, with its network, service proxy, DNS, log and stats servers) or
// many hollow nodes → runAll until SIGTERM. By default pods keep running
// when the agent stops and a restarted agent adopts them;
// CHOREO_STOP_PODS_ON_EXIT=1 (choreo up) stops them and takes the node's
// network down.
import { jetstreamManager } from "@nats-io/jetstream";
import Docker from "dockerode";
import { closeBus, connectBus, loadEventVerifier, requireSignedEvents, stopWhenBusClosed } from "@choreo/kit/bus";
import { ApiClient } from "@choreo/kit/client";
import { EventRecorder } from "@choreo/kit/events";
import { runAll, signalController, stopTimeoutMs, type Runnable } from "@choreo/kit/lifecycle";
import { createLogger } from "@choreo/kit/log";
import { actorToken, redactUrl } from "@choreo/kit/secrets";
import { createRegistry, getOrCreateCounter, metricsServer, processHealth } from "@choreo/kit/metrics";
import { loadConfig } from "./config.js";
import { hollowNodes, runAgents } from "./hollow-nodes.js";
import { LogServer } from "./logs/log-server.js";
import { ExecServer } from "./streams/exec-server.js";
import { PortForwardServer } from "./streams/port-forward-server.js";
import { realNode, type RealNode } from "./real-node.js";
import { engineAnswers } from "./runtime/docker/engine.js";
import { RequestedUsage } from "./stats/node-stats.js";
import { StatsServer } from "./stats/stats-server.js";

const config = loadConfig();
const log = createLogger({ service: "node-agent" });
// A stop bounded: with nats-server or redis-server gone, in-flight requests would wait for good (kill -9 loses nothing).
const ac = signalController({ stopTimeoutMs: stopTimeoutMs(12_000), onTimeout: () => log.error({}, "stop timed out; exiting") });
const registry = createRegistry("node-agent");
// (connectBus leaves nats.js' async stack traces off: two Error objects per api request, ~5% of a hollow-node process's CPU.)
const nc = await connectBus(config.natsUrl, `node-agent-${config.hollowNodes ? config.prefix : config.nodeName}`);
stopWhenBusClosed(nc, ac, log);
const jsm = await jetstreamManager(nc);
const runtime = config.hollowNodes > 0 ? "hollow" : await pickRuntime();
// Only events the api signed are acted on: a pod published on the bus by anyone else runs nothing.
if (config.eventVerifyKey) {
  const rejected = getOrCreateCounter(registry, "choreo_bus_events_rejected_total", "Event-log messages refused: unsigned, bad signature, or out of place", [
    "reason",
  ]);
  requireSignedEvents(nc, {
    verifier: loadEventVerifier(config.eventVerifyKey),
    onRejected: (reason, subject, sequence) => {
      rejected.inc({ reason });
      log.warn({ reason, subject, sequence }, "event refused: not the api's");
    },
  });
} else if (runtime !== "hollow") {
  throw new Error("a node that runs real pods needs CHOREO_EVENT_VERIFY_KEY (the api's event-signing public key, <api data dir>/pki/event-signing.pub)");
} else {
  log.warn({}, "event signatures not checked (no CHOREO_EVENT_VERIFY_KEY): hollow nodes only");
}
// Its own identity: the bearer token in CHOREO_API_TOKEN_FILE (0600), sent with every api request.
const client = new ApiClient(nc, { token: actorToken() });
const events = process.env["CHOREO_EVENTS"] === "0" ? undefined : new EventRecorder(client, "kubelet", log);
const agentOpts = {
  events,
  leaseRenewMs: config.leaseRenewMs,
  leaseDurationSeconds: config.leaseDurationSeconds,
  restartBackoff: { initialMs: config.restartBackoffMs, maxMs: 30 * config.restartBackoffMs },
  stopPodsOnExit: config.stopPodsOnExit,
  workers: config.workers,
  configResyncMs: config.configResyncMs,
};

/** auto: docker when an engine answers on its socket, else the process runtime. */
async function pickRuntime(): Promise<"docker" | "process" | "hollow"> {
  if (config.runtime !== "auto") return config.runtime;
  return (await engineAnswers(new Docker())) ? "docker" : "process";
}

let real: RealNode | undefined;
let agents: Runnable;
// Their pod informers: /readyz says informers-synced once each listed.
let informers: Runnable[];
if (runtime === "hollow") {
  // One node (named) or many (prefix + index), each with a log server for its synthetic logs.
  const single = config.hollowNodes <= 0;
  const hollow = hollowNodes({
    count: single ? 1 : config.hollowNodes,
    prefix: config.prefix,
    firstIndex: config.firstIndex,
    nodeName: single ? config.nodeName : undefined,
    client,
    nc,
    jsm,
    log,
    startDelayMs: config.startDelayMs,
    registry,
    resources: { cpu: config.cpu, memory: config.memory, pods: config.pods },
    agent: {
      ...agentOpts,
      extras: (a) => [
        new LogServer({ nc, node: a.nodeName, runtime: a.runtime, pods: a.informer, log }),
        new ExecServer({ nc, node: a.nodeName, runtime: a.runtime, pods: a.informer, log }),
        new PortForwardServer({ nc, node: a.nodeName, runtime: a.runtime, pods: a.informer, log }),
        // Hollow usage is the containers' requests: nothing to read between requests.
        new StatsServer({ nc, node: a.nodeName, source: new RequestedUsage({ runtime: a.runtime, pods: a.informer }), log, sampleEveryMs: 0 }),
      ],
    },
  });
  agents = runAgents(hollow, log);
  informers = hollow.map((a) => a.informer);
} else {
  real = await realNode(config, runtime, { client, nc, jsm, log, registry, signal: ac.signal, agent: agentOpts });
  agents = real.agent;
  informers = [real.agent.informer];
}
const runnables: Runnable[] = [agents];
if (config.metricsPort !== undefined) runnables.push(metricsServer({ registry, port: config.metricsPort, ...processHealth(nc, [...runnables, ...informers]) }));

log.info(
  { runtime, node: config.hollowNodes ? undefined : config.nodeName, nodes: config.hollowNodes || 1, nats: redactUrl(config.natsUrl) },
  "node agent starting",
);
try {
  // A failed runnable aborts the process's controller: the stop timeout bounds that stop too.
  await runAll(runnables, ac.signal, { log, onFailure: (err) => ac.abort(err) });
  // Pods stopped on exit: the node's bridge and rules go too (choreo down leaves nothing).
  if (real && config.stopPodsOnExit) await real.network.destroy();
} catch (err) {
  log.fatal({ err }, "node agent failed");
  process.exitCode = 1;
} finally {
  await closeBus(nc);
  log.info({}, "node agent stopped");
}
