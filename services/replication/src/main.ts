// The replication actor: config → NATS → ApiClient → informers (pods, RCs,
// ReplicaSets, Deployments, DaemonSets, Jobs, nodes, PodDisruptionBudgets, HPAs,
// ClusterRoles, namespaces, ServiceAccounts) → the RC and ReplicaSet managers,
// the Deployment, DaemonSet, Job, disruption, HPA, ClusterRole aggregation and
// service accounts controllers and the garbage collector → runAll until SIGTERM.
import { jetstreamManager } from "@nats-io/jetstream";
import { GC_OWNER_KINDS, type KindCase } from "@choreo/kit";
import { closeBus, connectBus, stopWhenBusClosed } from "@choreo/kit/bus";
import { ApiClient } from "@choreo/kit/client";
import { EventRecorder } from "@choreo/kit/events";
import { Informer } from "@choreo/kit/informer";
import { runAll, signalController, stopTimeoutMs, type Runnable } from "@choreo/kit/lifecycle";
import { createLogger } from "@choreo/kit/log";
import { actorToken, redactUrl } from "@choreo/kit/secrets";
import { createRegistry, metricsServer, processHealth } from "@choreo/kit/metrics";
import { loadConfig } from "./config.js";
import { CronJobController } from "./cronjobs/cronjob-controller.js";
import { DaemonSetController } from "./ds/daemonset-controller.js";
import { DisruptionController } from "./disruption/disruption-controller.js";
import { GarbageCollector, type OwnerKind } from "./gc/garbage-collector.js";
import { HpaController } from "./hpa/hpa-controller.js";
import { JobController } from "./jobs/job-controller.js";
import { DeploymentController } from "./deploy/deployment-controller.js";
import { ReplicationManager } from "./rc/rc-controller.js";
import { ReplicaSetManager } from "./rs/replicaset-controller.js";
import { podCacheTransform } from "./pod-cache.js";
import { AggregationController } from "./rbac/aggregation-controller.js";
import { ServiceAccountsController } from "./serviceaccounts/serviceaccounts-controller.js";

const config = loadConfig();
const log = createLogger({ service: "replication" });
// A stop bounded: with nats-server or redis-server gone, in-flight requests would wait for good (kill -9 loses nothing).
const ac = signalController({ stopTimeoutMs: stopTimeoutMs(10_000), onTimeout: () => log.error({}, "stop timed out; exiting") });
const registry = createRegistry("replication");
const nc = await connectBus(config.natsUrl, "replication");
stopWhenBusClosed(nc, ac, log);
const jsm = await jetstreamManager(nc);
// Its own identity: the bearer token in CHOREO_API_TOKEN_FILE (0600), sent with every api request.
const client = new ApiClient(nc, { token: actorToken() });
const recorder = config.events ? new EventRecorder(client, "replication-controller", log) : undefined;

const informer = <C extends KindCase>(kind: C): Informer<C> => new Informer({ client, nc, jsm, kind, resyncMs: 5 * 60_000, log });
// Pods as the controllers read them (pod-cache.ts): no managedFields, env, probes... for each of 150,000 pods.
const pods = new Informer({ client, nc, jsm, kind: "pod", resyncMs: 5 * 60_000, transform: podCacheTransform(), log });
const rcs = informer("replicationController");
const replicasets = informer("replicaSet");
const deployments = informer("deployment");
const daemonsets = informer("daemonSet");
const jobs = informer("job");
const cronjobs = informer("cronJob");
const nodes = informer("node");
const pdbs = informer("podDisruptionBudget");
const hpas = informer("horizontalPodAutoscaler");
const clusterRoles = informer("clusterRole");
const namespaces = informer("namespace");
const serviceAccounts = informer("serviceAccount");
const recorderAs = (component: string) => (config.events ? new EventRecorder(client, component, log) : undefined);
const rcManager = new ReplicationManager({ client, rcs, pods, recorder, log, workers: config.workers, burst: config.burst, registry });
const rsManager = new ReplicaSetManager({
  client,
  replicasets,
  pods,
  recorder: recorderAs("replicaset-controller"),
  log,
  workers: config.workers,
  burst: config.burst,
  registry,
});
const deploymentController = new DeploymentController({
  client,
  deployments,
  replicasets,
  pods,
  recorder: recorderAs("deployment-controller"),
  log,
  workers: config.workers,
  registry,
});
const dsController = new DaemonSetController({ client, daemonsets, pods, nodes, recorder: recorderAs("daemonset-controller"), log, registry });
const jobController = new JobController({ client, jobs, pods, recorder: recorderAs("job-controller"), log, registry });
const cronJobController = new CronJobController({ client, cronjobs, jobs, recorder: recorderAs("cronjob-controller"), log, registry });
const hpaController = new HpaController({
  client,
  metrics: client,
  hpas,
  pods,
  recorder: recorderAs("horizontal-pod-autoscaler"),
  log,
  registry,
  beforeScale: config.faultCrashBeforeHpaScale ? () => process.kill(process.pid, "SIGKILL") : undefined,
});
const disruptionController = new DisruptionController({
  client,
  pdbs,
  pods,
  rcs,
  replicasets,
  deployments,
  recorder: recorderAs("controllermanager"),
  log,
  workers: config.workers,
  registry,
});
const aggregationController = new AggregationController({ client, clusterRoles, log, registry });
const serviceAccountsController = new ServiceAccountsController({ client, namespaces, serviceAccounts, log, registry });
// The owner kinds are kit's GC_OWNER_KINDS (the api adds the GC's finalizers to the same kinds); each needs its informer here.
const ownerCaches: Partial<Record<KindCase, OwnerKind["cache"]>> = {
  replicationController: rcs,
  replicaSet: replicasets,
  deployment: deployments,
  daemonSet: daemonsets,
  job: jobs,
  cronJob: cronjobs,
};
const gc = new GarbageCollector({
  client,
  pods,
  dependents: [
    { resource: "replicasets", cache: replicasets },
    { resource: "jobs", cache: jobs },
  ],
  log,
  registry,
  owners: GC_OWNER_KINDS.map((k) => {
    const cache = ownerCaches[k.case];
    if (!cache) throw new Error(`no informer for the garbage collector's owner kind ${k.kind}`);
    return { kind: k.kind, resource: k.resource, cache };
  }),
});

const runnables: Runnable[] = [
  pods,
  rcs,
  replicasets,
  deployments,
  daemonsets,
  jobs,
  cronjobs,
  nodes,
  pdbs,
  hpas,
  clusterRoles,
  namespaces,
  serviceAccounts,
  rcManager,
  rsManager,
  deploymentController,
  dsController,
  jobController,
  cronJobController,
  disruptionController,
  hpaController,
  aggregationController,
  serviceAccountsController,
  gc,
];
if (config.metricsPort !== undefined) runnables.push(metricsServer({ registry, port: config.metricsPort, ...processHealth(nc, runnables) }));

log.info({ nats: redactUrl(config.natsUrl), workers: config.workers, burst: config.burst }, "replication actor starting");
try {
  // A failed runnable aborts the process's controller: the stop timeout bounds that stop too.
  await runAll(runnables, ac.signal, { log, onFailure: (err) => ac.abort(err) });
} catch (err) {
  log.fatal({ err }, "replication actor failed");
  process.exitCode = 1;
} finally {
  await closeBus(nc);
  log.info({}, "replication actor stopped");
}
