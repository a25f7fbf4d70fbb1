// The scheduler: config → NATS → ApiClient → pod/node informers → the
// scheduler and (under leader election) the node lifecycle → runAll until
// SIGTERM.
import { jetstreamManager } from "@nats-io/jetstream";
import { closeBus, connectBus, stopWhenBusClosed } from "@choreo/kit/bus";
import { ApiClient } from "@choreo/kit/client";
import { runAll, signalController, stopTimeoutMs } from "@choreo/kit/lifecycle";
import { createLogger } from "@choreo/kit/log";
import { actorToken, redactUrl } from "@choreo/kit/secrets";
import { createRegistry, metricsServer, processHealth } from "@choreo/kit/metrics";
import { buildActors } from "./actors.js";
import { loadConfig } from "./config.js";

const config = loadConfig();
const log = createLogger({ service: "scheduler" });
// A stop bounded: with nats-server or redis-server gone, in-flight requests would wait for good (kill -9 loses nothing).
const ac = signalController({ stopTimeoutMs: stopTimeoutMs(10_000), onTimeout: () => log.error({}, "stop timed out; exiting") });
const nc = await connectBus(config.natsUrl, `scheduler-${config.identity}`);
stopWhenBusClosed(nc, ac, log);
const jsm = await jetstreamManager(nc);
// Its own identity: the bearer token in CHOREO_API_TOKEN_FILE (0600), sent with every api request.
const client = new ApiClient(nc, { token: actorToken() });

const registry = createRegistry("scheduler");
const { runnables } = buildActors({ client, nc, jsm, log, registry }, config);
if (config.metricsPort !== undefined) runnables.push(metricsServer({ registry, port: config.metricsPort, ...processHealth(nc, runnables) }));

log.info({ scheduler: config.schedulerName, workers: config.workers, nats: redactUrl(config.natsUrl), lifecycle: config.nodeLifecycle }, "scheduler starting");
try {
  // A failed runnable aborts the process's controller: the stop timeout bounds that stop too.
  await runAll(runnables, ac.signal, { log, onFailure: (err) => ac.abort(err) });
} catch (err) {
  log.fatal({ err }, "scheduler failed");
  process.exitCode = 1;
} finally {
  await closeBus(nc);
  log.info({}, "scheduler stopped");
}
