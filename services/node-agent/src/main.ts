// The node agent: config → NATS → ApiClient → one NodeAgent per (hollow)
// node → runAll until SIGTERM. Pods keep running in the api when the agent
// stops; a restarted agent adopts them.
import { jetstreamManager } from "@nats-io/jetstream";
import { connectBus } from "@choreo/kit/bus";
import { ApiClient } from "@choreo/kit/client";
import { EventRecorder } from "@choreo/kit/events";
import { runAll, signalController, type Runnable } from "@choreo/kit/lifecycle";
import { createLogger } from "@choreo/kit/log";
import { createRegistry, metricsServer } from "@choreo/kit/metrics";
import { loadConfig } from "./config.js";
import { hollowNodes, runAgents } from "./hollow-nodes.js";

const config = loadConfig();
const log = createLogger({ service: "node-agent" });
const ac = signalController();
const registry = createRegistry("node-agent");
const nc = await connectBus(config.natsUrl, `node-agent-${config.hollowNodes ? config.prefix : config.nodeName}`);
const jsm = await jetstreamManager(nc);
const client = new ApiClient(nc);

// One node (named) or many (prefix + index); both use the hollow runtime for now.
const single = config.hollowNodes <= 0;
const agents = hollowNodes({
  count: single ? 1 : config.hollowNodes, prefix: config.prefix, firstIndex: config.firstIndex, nodeName: single ? config.nodeName : undefined,
  client, nc, jsm, log, startDelayMs: config.startDelayMs, registry,
  resources: { cpu: config.cpu, memory: config.memory, pods: config.pods },
  agent: { events: process.env["CHOREO_EVENTS"] === "0" ? undefined : new EventRecorder(client, "kubelet", log), leaseRenewMs: config.leaseRenewMs, leaseDurationSeconds: config.leaseDurationSeconds, restartBackoff: { initialMs: config.restartBackoffMs, maxMs: 30 * config.restartBackoffMs } },
});
const runnables: Runnable[] = [runAgents(agents, log)];
if (config.metricsPort !== undefined) runnables.push(metricsServer({ registry, port: config.metricsPort }));

log.info({ nodes: agents.length, nats: config.natsUrl }, "node agent starting");
try {
  await runAll(runnables, ac.signal);
} catch (err) {
  log.fatal({ err }, "node agent failed");
  process.exitCode = 1;
} finally {
  await nc.drain().catch(() => undefined);
  log.info({}, "node agent stopped");
}
