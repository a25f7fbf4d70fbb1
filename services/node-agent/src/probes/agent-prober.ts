import { keyOf } from "@choreo/kit";
import { objectRef, type EventRecorder } from "@choreo/kit/events";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Logger } from "@choreo/kit/log";
import type { Runtime } from "../runtime/runtime.js";
import { Prober } from "./prober.js";

/** What the agent lends its prober. */
export interface AgentProberDeps {
  runtime: Runtime;
  /** The informer cache of the node's pods, by key. */
  pods: { get(key: string): Pod | undefined };
  /** Queues a pod key for the pod reconciler. */
  enqueue(key: string): void;
  events?: Pick<EventRecorder, "emit"> | undefined;
  log: Logger;
}

/**
 * The prober of a node agent (undefined for runtimes without probes): a
 * changed result queues the pod; failures are `Unhealthy` events; a
 * liveness or startup probe failing out is a `Killing` event and a
 * `killContainer`, after which the restart policy decides, as for any exit.
 */
export function agentProber(d: AgentProberDeps): Prober | undefined {
  if (!d.runtime.probes) return undefined;
  const keyOfUid = (uid: string): string | undefined => {
    const p = d.runtime.listPods().find((x) => x.uid === uid);
    return p ? keyOf(p) : undefined;
  };
  const podOfUid = (uid: string): Pod | undefined => {
    const k = keyOfUid(uid);
    return k ? d.pods.get(k) : undefined;
  };
  const enqueueUid = (uid: string): void => {
    const k = keyOfUid(uid);
    if (k) d.enqueue(k);
  };
  return new Prober(
    d.runtime,
    {
      changed: enqueueUid,
      unhealthy: (uid, _container, _kind, message) => {
        const pod = podOfUid(uid);
        if (pod) d.events?.emit(objectRef("Pod", "v1", pod), "Warning", "Unhealthy", message);
      },
      kill: (uid, container, kind, grace) => {
        const pod = podOfUid(uid);
        if (pod)
          d.events?.emit(objectRef("Pod", "v1", pod), "Normal", "Killing", `Container ${container} failed ${kind.toLowerCase()} probe, will be restarted`);
        d.log.info({ uid, container, probe: kind }, "container unhealthy; killing it");
        d.runtime.killContainer(uid, container, grace).then(
          () => enqueueUid(uid),
          (err: unknown) => d.log.warn({ err, uid, container }, "killing an unhealthy container failed"),
        );
      },
    },
    d.log,
  );
}
