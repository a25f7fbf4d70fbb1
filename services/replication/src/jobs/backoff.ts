// Back-off before a Job makes new pods after pod failures (pure), as
// Kubernetes' job controller: 10 s after the first failure since the last
// success, doubling with each further one, at most 6 minutes, counted from the
// last failure. Read from the pods themselves, so a restart keeps it.
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";

export const POD_FAILURE_BACKOFF_MS = 10_000;
export const MAX_POD_FAILURE_BACKOFF_MS = 6 * 60_000;

/** When a finished pod finished: its containers' latest finishedAt, else its last condition change, else its creation. */
export function finishedAt(p: Pod): number {
  let t = Number.NaN;
  for (const c of p.status?.containerStatuses ?? []) {
    const f = Date.parse(c.state?.terminated?.finishedAt ?? "");
    if (!Number.isNaN(f) && !(f <= t)) t = f;
  }
  if (!Number.isNaN(t)) return t;
  for (const c of p.status?.conditions ?? []) {
    const f = Date.parse(c.lastTransitionTime);
    if (!Number.isNaN(f) && !(f <= t)) t = f;
  }
  return Number.isNaN(t) ? Date.parse(p.metadata?.creationTimestamp ?? "") || 0 : t;
}

/** The delay after `n` consecutive failures: 10 s · 2^(n−1), capped; 0 for none. */
export function backoffDelay(n: number): number {
  if (n <= 0) return 0;
  return Math.min(MAX_POD_FAILURE_BACKOFF_MS, POD_FAILURE_BACKOFF_MS * 2 ** Math.min(n - 1, 30));
}

/** Milliseconds until the Job may create pods again (0: now): failures after the last success, from the last failure. */
export function remainingBackoff(pods: readonly Pod[], nowMs: number): number {
  let lastSuccess = Number.NEGATIVE_INFINITY;
  for (const p of pods) if (p.status?.phase === "Succeeded") lastSuccess = Math.max(lastSuccess, finishedAt(p));
  let failures = 0;
  let lastFailure = Number.NEGATIVE_INFINITY;
  for (const p of pods) {
    if (p.status?.phase !== "Failed") continue;
    const t = finishedAt(p);
    if (t < lastSuccess) continue;
    failures++;
    lastFailure = Math.max(lastFailure, t);
  }
  if (failures === 0) return 0;
  return Math.max(0, lastFailure + backoffDelay(failures) - nowMs);
}
