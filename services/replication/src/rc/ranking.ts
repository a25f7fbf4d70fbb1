// Which pods go first when an RC scales down (pure): Kubernetes'
// ActivePodsWithRanks ordering — the pods whose loss hurts least first.
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { isReady } from "../pod-template.js";

const PHASE_RANK: Record<string, number> = { Pending: 0, Unknown: 1, Running: 2 };

function readySince(p: Pod): number {
  const c = p.status?.conditions.find((x) => x.type === "Ready" && x.status === "True");
  const t = c ? Date.parse(c.lastTransitionTime) : NaN;
  return Number.isFinite(t) ? t : 0;
}

const restarts = (p: Pod): number => (p.status?.containerStatuses ?? []).reduce((n, c) => n + c.restartCount, 0);
const created = (p: Pod): number => {
  const t = Date.parse(p.metadata?.creationTimestamp ?? "");
  return Number.isFinite(t) ? t : 0;
};

/**
 * Negative when `a` should be deleted before `b`: unscheduled before
 * scheduled, Pending < Unknown < Running, not ready before ready, ready for
 * less time before ready for longer, more restarts before fewer, newer before
 * older.
 */
export function compareForDeletion(a: Pod, b: Pod): number {
  const sa = a.spec?.nodeName ? 1 : 0;
  const sb = b.spec?.nodeName ? 1 : 0;
  if (sa !== sb) return sa - sb;
  const pa = PHASE_RANK[a.status?.phase ?? "Pending"] ?? 0;
  const pb = PHASE_RANK[b.status?.phase ?? "Pending"] ?? 0;
  if (pa !== pb) return pa - pb;
  const ra = isReady(a) ? 1 : 0;
  const rb = isReady(b) ? 1 : 0;
  if (ra !== rb) return ra - rb;
  if (ra === 1) {
    const ta = readySince(a);
    const tb = readySince(b);
    if (ta !== tb) return tb - ta;
  }
  const xa = restarts(a);
  const xb = restarts(b);
  if (xa !== xb) return xb - xa;
  return created(b) - created(a);
}

/** The `n` pods to delete first. */
export function podsToDelete(pods: readonly Pod[], n: number): Pod[] {
  return [...pods].sort(compareForDeletion).slice(0, Math.max(0, n));
}
