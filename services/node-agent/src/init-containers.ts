import type { ContainerStatus } from "@choreo/kit/gen/choreo/core/v1/core";

/**
 * Init containers as the kubelet runs them (pure): one at a time in spec
 * order, each to completion (exit 0), before any app container starts. A
 * container of a pod that has not run yet waits with this reason (init and
 * app containers alike, as Kubernetes shows them).
 */
export const POD_INITIALIZING = "PodInitializing";

/** What the agent does next about a pod's init containers. */
export type InitStep =
  /** All completed (or none): the app containers may start. */
  | { kind: "done" }
  /** Start this init container (it never ran). */
  | { kind: "start"; container: string }
  /** One is running or being created (image pull): nothing to do until it changes. */
  | { kind: "wait"; container: string }
  /** It failed and the restart policy (Always, OnFailure) runs it again, with back-off. */
  | { kind: "restart"; container: string }
  /** It failed under restartPolicy Never: the pod fails, nothing more runs. */
  | { kind: "failed"; container: string };

/** Whether a container ran to completion (exit 0). */
export function completed(cs: ContainerStatus): boolean {
  return cs.state?.terminated?.exitCode === 0;
}

/** Whether a container has not run yet (waiting PodInitializing, no earlier run). */
export function notStarted(cs: ContainerStatus): boolean {
  return cs.state?.waiting?.reason === POD_INITIALIZING && !cs.lastState?.terminated;
}

/**
 * Whether the pod is initialized: every init container completed, or an
 * app container has run already (the kubelet's rule: then the init
 * containers ran before, even if their records are gone).
 */
export function initialized(inits: readonly ContainerStatus[], apps: readonly ContainerStatus[]): boolean {
  return inits.every(completed) || apps.some((cs) => !notStarted(cs));
}

/** The next step for a pod's init containers, from their statuses in spec order and the pod's restartPolicy. */
export function nextInitStep(policy: string, inits: readonly ContainerStatus[], apps: readonly ContainerStatus[]): InitStep {
  if (initialized(inits, apps)) return { kind: "done" };
  for (const cs of inits) {
    if (completed(cs)) continue;
    if (notStarted(cs)) return { kind: "start", container: cs.name };
    if (cs.state?.terminated) return { kind: policy === "Never" ? "failed" : "restart", container: cs.name };
    return { kind: "wait", container: cs.name };
  }
  return { kind: "done" };
}

/** The restart policy of init containers: one that completed never runs again, a failed one reruns unless the pod's policy is Never. */
export function initRestartPolicy(podPolicy: string): string {
  return podPolicy === "Never" ? "Never" : "OnFailure";
}

/** The names of the init containers that have not completed (the Initialized condition's message). */
export function incomplete(inits: readonly ContainerStatus[]): string[] {
  return inits.filter((cs) => !completed(cs)).map((cs) => cs.name);
}

/** An init container's status as Kubernetes reports it: ready once it completed, started while it runs. */
export function initStatusView(cs: ContainerStatus): ContainerStatus {
  return { ...cs, ready: completed(cs), started: Boolean(cs.state?.running) };
}
