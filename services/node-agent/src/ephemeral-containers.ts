import { keyOf } from "@choreo/kit";
import type { ContainerStatus, EphemeralContainer, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { EventRecorder } from "@choreo/kit/events";
import { objectRef } from "@choreo/kit/events";
import type { Logger } from "@choreo/kit/log";
import type { PodRuntimeStatus, Runtime } from "./runtime/runtime.js";

/**
 * Ephemeral containers (`kubectl debug`) as the kubelet runs them (pure
 * part): each one in the pod's spec that the runtime has not started yet is
 * started, even before the pod's initialization completes; one the runtime
 * knows — running or exited — is never started again (no restart policy
 * applies to them).
 */
export function ephemeralToStart(pod: Pod, rt: PodRuntimeStatus): EphemeralContainer[] {
  const known = new Set((rt.ephemeralContainerStatuses ?? []).map((c) => c.name));
  return (pod.spec?.ephemeralContainers ?? []).filter((c) => !known.has(c.name));
}

/** An ephemeral container's status as Kubernetes reports it: never ready, started while it runs, never restarted. */
export function ephemeralStatusView(cs: ContainerStatus): ContainerStatus {
  return { ...cs, ready: false, started: Boolean(cs.state?.running), restartCount: 0 };
}

/** What {@link startEphemeralContainers} works with. */
export interface EphemeralDeps {
  runtime: Runtime;
  log: Logger;
  events?: Pick<EventRecorder, "emit"> | undefined;
}

/** Starts the pod's new ephemeral containers; the pod's runtime status after it. */
export async function startEphemeralContainers(d: EphemeralDeps, pod: Pod, rt: PodRuntimeStatus): Promise<PodRuntimeStatus> {
  const todo = ephemeralToStart(pod, rt);
  if (todo.length === 0) return rt;
  const meta = pod.metadata!;
  for (const c of todo) {
    await d.runtime.startEphemeralContainer(pod, c);
    d.log.info({ pod: keyOf(meta), container: c.name, target: c.targetContainerName }, "ephemeral container started");
    d.events?.emit(objectRef("Pod", "v1", pod), "Normal", "Started", `Started container ${c.name}`);
  }
  return d.runtime.podStatus(meta.uid) ?? rt;
}
