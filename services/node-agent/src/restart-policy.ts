import type { ContainerStatus } from "@choreo/kit/gen/choreo/core/v1/core";

/** How long a crashing container waits before its next restart. */
export interface RestartBackoff {
  /** The wait before the second restart (the first is immediate); doubles from there. */
  initialMs: number;
  maxMs: number;
}

/** Kubernetes' kubelet: 10 s doubling to 5 min. */
export const KUBELET_BACKOFF: RestartBackoff = { initialMs: 10_000, maxMs: 300_000 };

/** Whether a container that exited with `exitCode` is restarted under `policy` (Always, OnFailure, Never). */
export function shouldRestart(policy: string, exitCode: number): boolean {
  if (policy === "Never") return false;
  if (policy === "OnFailure") return exitCode !== 0;
  return true; // Always, and the default
}

/** The wait before restarting a container that already restarted `restartCount` times. */
export function restartDelayMs(restartCount: number, b: RestartBackoff): number {
  if (restartCount <= 0) return 0;
  return Math.min(b.maxMs, b.initialMs * 2 ** Math.min(restartCount - 1, 30));
}

/** What to do about a pod's exited containers now. */
export interface RestartPlan {
  /** Containers to restart now. */
  restartNow: string[];
  /** Containers waiting out their back-off (reported as CrashLoopBackOff). */
  backingOff: Set<string>;
  /** When to look again for the earliest back-off to end; undefined: no back-off running. */
  recheckMs: number | undefined;
}

/** Plans restarts of terminated containers from their statuses (pure). */
export function planRestarts(policy: string, statuses: readonly ContainerStatus[], nowMs: number, b: RestartBackoff): RestartPlan {
  const plan: RestartPlan = { restartNow: [], backingOff: new Set(), recheckMs: undefined };
  for (const cs of statuses) {
    const t = cs.state?.terminated;
    if (!t || !shouldRestart(policy, t.exitCode)) continue;
    const finished = Date.parse(t.finishedAt);
    const due = (Number.isNaN(finished) ? nowMs : finished) + restartDelayMs(cs.restartCount, b);
    if (due <= nowMs) {
      plan.restartNow.push(cs.name);
    } else {
      plan.backingOff.add(cs.name);
      plan.recheckMs = Math.min(plan.recheckMs ?? Infinity, due - nowMs);
    }
  }
  return plan;
}
