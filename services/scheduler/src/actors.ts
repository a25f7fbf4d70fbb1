// Builds the scheduler's informers and actors (main.ts and tests share it).
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { ApiClient } from "@choreo/kit/client";
import { Informer } from "@choreo/kit/informer";
import { LeaderElector } from "@choreo/kit/leader";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Registry } from "prom-client";
import type { Config } from "./config.js";
import { EventRecorder } from "@choreo/kit/events";
import { BY_NODE, NODE_LEASE_NAMESPACE, NodeLifecycle, nodeNameOf } from "./node-lifecycle.js";
import { podCacheTransform } from "./pod-cache.js";
import { Scheduler } from "./scheduler.js";

export interface Actors {
  scheduler: Scheduler;
  lifecycle: NodeLifecycle | undefined;
  runnables: Runnable[];
}

export function buildActors(deps: { client: ApiClient; nc: NatsConnection; jsm: JetStreamManager; log: Logger; registry?: Registry }, config: Config): Actors {
  const { client, nc, jsm, log, registry } = deps;
  const pods = new Informer<"pod">({ client, nc, jsm, kind: "pod", transform: podCacheTransform(), log });
  pods.addIndexer(BY_NODE, nodeNameOf);
  const nodes = new Informer<"node">({ client, nc, jsm, kind: "node", log });
  const recorder = new EventRecorder(client, config.schedulerName, log);
  // CHOREO_EVENTS=0 (benchmarks): no Scheduled/FailedScheduling Events; node events stay.
  const schedulingEvents = config.events ? recorder : { emit: () => undefined };
  const events = recorder;
  const scheduler = new Scheduler({
    client,
    pods,
    nodes,
    events: schedulingEvents,
    registry,
    log: log.child({ subsystem: "scheduler" }),
    schedulerName: config.schedulerName,
    workers: config.workers,
  });
  const runnables: Runnable[] = [pods, nodes, scheduler];
  if (!config.nodeLifecycle) return { scheduler, lifecycle: undefined, runnables };

  const leases = new Informer<"lease">({ client, nc, jsm, kind: "lease", namespace: NODE_LEASE_NAMESPACE, log });
  const lifecycle = new NodeLifecycle({
    client,
    nodes,
    leases,
    pods,
    events,
    log: log.child({ subsystem: "node-lifecycle" }),
    graceMs: config.graceMs,
    evictionMs: config.evictionMs,
    evictionRate: config.evictionRate,
  });
  runnables.push(leases);
  if (!config.leaderElect) runnables.push(lifecycle);
  else {
    runnables.push(
      new LeaderElector({
        client,
        namespace: "kube-system",
        name: "choreo-node-lifecycle",
        identity: config.identity,
        log,
        onStartedLeading: (signal) => lifecycle.start(signal),
      }),
    );
  }
  return { scheduler, lifecycle, runnables };
}
