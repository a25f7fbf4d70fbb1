import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { EventRecorder } from "@choreo/kit/events";
import { objectRef } from "@choreo/kit/events";
import type { Logger } from "@choreo/kit/log";
import { initRestartPolicy, nextInitStep, notStarted } from "./init-containers.js";
import { planRestarts, type RestartBackoff } from "./restart-policy.js";
import type { PodRuntimeStatus, Runtime } from "./runtime/runtime.js";

/** What {@link advanceContainers} works with. */
export interface AdvanceDeps {
  runtime: Runtime;
  backoff: RestartBackoff;
  log: Logger;
  events?: Pick<EventRecorder, "emit"> | undefined;
}

/** What {@link advanceContainers} did: the pod's status after it, and the init container waiting out a restart back-off. */
export interface Advanced {
  rt: PodRuntimeStatus;
  backingOff: Set<string>;
  /** When the back-off ends; undefined: none running. */
  recheckMs: number | undefined;
}

/**
 * One step of a pod's init sequence (the kubelet's computeInitContainerActions):
 * start the next init container that never ran, restart a failed one under
 * the pod's restartPolicy with the kubelet's back-off (Never: nothing, the
 * pod fails), and once all completed start the app containers that have
 * not run yet. A pod without init containers only gets the last part (app
 * containers a runtime created without starting, e.g. after an agent restart).
 */
export async function advanceContainers(d: AdvanceDeps, pod: Pod, rt: PodRuntimeStatus): Promise<Advanced> {
  const uid = pod.metadata?.uid ?? "";
  const key = `${pod.metadata?.namespace ?? ""}/${pod.metadata?.name ?? ""}`;
  const policy = pod.spec?.restartPolicy || "Always";
  const inits = rt.initContainerStatuses ?? [];
  const out: Advanced = { rt, backingOff: new Set(), recheckMs: undefined };
  const started = (c: string): void => d.events?.emit(objectRef("Pod", "v1", pod), "Normal", "Started", `Started container ${c}`);
  const step = nextInitStep(policy, inits, rt.containerStatuses);
  switch (step.kind) {
    case "start":
      await d.runtime.startContainer(uid, step.container);
      d.log.info({ pod: key, container: step.container }, "init container started");
      started(step.container);
      break;
    case "restart": {
      const cs = inits.find((c) => c.name === step.container)!;
      const plan = planRestarts(initRestartPolicy(policy), [cs], Date.now(), d.backoff);
      if (plan.restartNow.length > 0) {
        await d.runtime.restartContainer(uid, step.container);
        d.log.info({ pod: key, container: step.container, restartCount: cs.restartCount + 1 }, "init container restarted");
        started(step.container);
      }
      out.backingOff = plan.backingOff;
      out.recheckMs = plan.recheckMs;
      break;
    }
    case "done": {
      const waiting = rt.containerStatuses.filter(notStarted).map((cs) => cs.name);
      for (const c of waiting) await d.runtime.startContainer(uid, c);
      if (waiting.length > 0) d.log.info({ pod: key, containers: waiting }, "app containers started");
      for (const c of waiting) started(c);
      break;
    }
    case "wait":
    case "failed":
      return out;
  }
  out.rt = d.runtime.podStatus(uid) ?? rt;
  return out;
}
