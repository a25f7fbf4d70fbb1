import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";

/** Whether the pod still runs somewhere: bound and not terminated. */
function running(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return Boolean(pod.spec?.nodeName) && phase !== "Succeeded" && phase !== "Failed";
}

/**
 * Seconds a pod's deletion waits for its node agent to stop it: bound,
 * running pods wait (the asked period, else the pod's, else 30); others go
 * at once.
 */
export function podGracePeriod(pod: Pod, asked: number | undefined): number {
  if (!running(pod)) return 0;
  return Math.max(0, asked ?? pod.spec?.terminationGracePeriodSeconds ?? 30);
}

/**
 * Whether a pod being deleted stays after its last finalizer went: a
 * running pod with a grace period waits for its node agent, which removes
 * it with gracePeriodSeconds=0 once its containers stopped.
 */
export function podWaitsForNode(pod: Pod): boolean {
  return running(pod) && (pod.metadata?.deletionGracePeriodSeconds ?? 1) > 0;
}
