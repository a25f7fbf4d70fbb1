// The endpoints actor: config → NATS → ApiClient → informers (services,
// pods, endpoints) → the endpoints reconciler → runAll until SIGTERM.
import { jetstreamManager } from "@nats-io/jetstream";
import { closeBus, connectBus, stopWhenBusClosed } from "@choreo/kit/bus";
import { ApiClient } from "@choreo/kit/client";
import { Informer } from "@choreo/kit/informer";
import { runAll, signalController, stopTimeoutMs, type Runnable } from "@choreo/kit/lifecycle";
import { createLogger } from "@choreo/kit/log";
import { actorToken, redactUrl } from "@choreo/kit/secrets";
import { createRegistry, metricsServer, processHealth } from "@choreo/kit/metrics";
import { EndpointsReconciler } from "./endpoints-reconciler.js";
import { podCacheTransform } from "./pod-cache.js";

const natsUrl = process.env["CHOREO_NATS_URL"] ?? "nats://127.0.0.1:14222";
const metricsPort = process.env["CHOREO_METRICS_PORT"] ? Number(process.env["CHOREO_METRICS_PORT"]) : undefined;
const workers = Number(process.env["CHOREO_ENDPOINTS_WORKERS"] ?? 4) || 4;

const log = createLogger({ service: "endpoints" });
// A stop bounded: with nats-server or redis-server gone, in-flight requests would wait for good (kill -9 loses nothing).
const ac = signalController({ stopTimeoutMs: stopTimeoutMs(10_000), onTimeout: () => log.error({}, "stop timed out; exiting") });
const registry = createRegistry("endpoints");
const nc = await connectBus(natsUrl, "endpoints");
stopWhenBusClosed(nc, ac, log);
const jsm = await jetstreamManager(nc);
// Its own identity: the bearer token in CHOREO_API_TOKEN_FILE (0600), sent with every api request.
const client = new ApiClient(nc, { token: actorToken() });

const informer = <C extends "service" | "endpoints">(kind: C): Informer<C> => new Informer({ client, nc, jsm, kind, resyncMs: 5 * 60_000, log });
const services = informer("service");
// Pods as the reconciler reads them (pod-cache.ts): labels, IPs, readiness, ports.
const pods = new Informer({ client, nc, jsm, kind: "pod", resyncMs: 5 * 60_000, transform: podCacheTransform(), log });
const endpoints = informer("endpoints");
const reconciler = new EndpointsReconciler({ client, services, pods, endpoints, log, workers, registry });

const runnables: Runnable[] = [services, pods, endpoints, reconciler];
if (metricsPort !== undefined) runnables.push(metricsServer({ registry, port: metricsPort, ...processHealth(nc, runnables) }));

log.info({ nats: redactUrl(natsUrl), workers }, "endpoints actor starting");
try {
  // A failed runnable aborts the process's controller: the stop timeout bounds that stop too.
  await runAll(runnables, ac.signal, { log, onFailure: (err) => ac.abort(err) });
} catch (err) {
  log.fatal({ err }, "endpoints actor failed");
  process.exitCode = 1;
} finally {
  await closeBus(nc);
  log.info({}, "endpoints actor stopped");
}
