// How the HPA turns a metrics recommendation into the replicas it writes, as
// Kubernetes' horizontal.go: without spec.behavior, the classic rules (the
// highest recommendation of the downscale window; a scale-up at most to
// max(2 × current, 4)); with it, the stabilization windows over past
// recommendations (up: the lowest of the window, down: the highest) and the
// scaling policies over the scale events of their periods. Pure: the history
// is a value the controller keeps per HPA and passes in, the clock is `now`.
import type { HPAScalingRules, HorizontalPodAutoscalerBehavior } from "@choreo/kit/gen/choreo/autoscaling/v2/autoscaling";

/** Kubernetes' --horizontal-pod-autoscaler-downscale-stabilization default. */
export const DOWNSCALE_STABILIZATION_MS = 300_000;

export interface Recommendation {
  replicas: number;
  at: number;
}

export interface ScaleEvent {
  /** Replicas added (up) or removed (down), positive. */
  change: number;
  at: number;
  outdated: boolean;
}

/** What the controller remembers of one HPA between syncs. */
export interface HpaHistory {
  recommendations: Recommendation[];
  scaleUp: ScaleEvent[];
  scaleDown: ScaleEvent[];
}

export function emptyHistory(): HpaHistory {
  return { recommendations: [], scaleUp: [], scaleDown: [] };
}

/** A condition the normalization sets: its reason and message. */
export interface Verdict {
  readonly reason: string;
  readonly message: string;
}

/** The outcome of a normalization: the replicas, and the AbleToScale (True) and ScalingLimited conditions. */
export interface Normalized {
  readonly replicas: number;
  readonly ableToScale: Verdict;
  readonly limited: Verdict & { readonly status: "True" | "False" };
}

const READY: Verdict = { reason: "ReadyForNewScale", message: "recommended size matches current size" };
const WITHIN: Verdict = { reason: "DesiredWithinRange", message: "the desired count is within the acceptable range" };
const TOO_MANY: Verdict = { reason: "TooManyReplicas", message: "the desired replica count is more than the maximum replica count" };
const TOO_FEW: Verdict = { reason: "TooFewReplicas", message: "the desired replica count is less than the minimum replica count" };
const UP_LIMIT: Verdict = { reason: "ScaleUpLimit", message: "the desired replica count is increasing faster than the maximum scale rate" };
const DOWN_LIMIT: Verdict = { reason: "ScaleDownLimit", message: "the desired replica count is decreasing faster than the maximum scale rate" };

/** The first recommendation of an HPA is the current size (Kubernetes' recordInitialRecommendation). */
export function recordInitialRecommendation(h: HpaHistory, current: number, now: number): void {
  if (h.recommendations.length === 0) h.recommendations.push({ replicas: current, at: now });
}

/** Records a recommendation, reusing the slot of one older than `obsoleteBefore`. */
function record(h: HpaHistory, replicas: number, now: number, obsolete: (r: Recommendation) => boolean): void {
  const old = h.recommendations.findLastIndex(obsolete);
  if (old >= 0) h.recommendations[old] = { replicas, at: now };
  else h.recommendations.push({ replicas, at: now });
}

/** Kubernetes' stabilizeRecommendation (no behavior): the highest recommendation of the downscale window. */
export function stabilizeRecommendation(h: HpaHistory, desired: number, now: number, windowMs = DOWNSCALE_STABILIZATION_MS): number {
  const cutoff = now - windowMs;
  let highest = desired;
  for (const r of h.recommendations) if (r.at >= cutoff && r.replicas > highest) highest = r.replicas;
  record(h, desired, now, (r) => r.at < cutoff);
  return highest;
}

/** Kubernetes' convertDesiredReplicasWithRules: min/max, and a scale-up at most to max(2 × current, 4). */
export function convertDesiredReplicasWithRules(current: number, desired: number, min: number, max: number): { replicas: number } & Verdict {
  const scaleUpLimit = Math.max(2 * current, 4);
  const [maxAllowed, limit] = max > scaleUpLimit ? [scaleUpLimit, UP_LIMIT] : [max, TOO_MANY];
  if (desired < min) return { replicas: min, ...TOO_FEW };
  if (desired > maxAllowed) return { replicas: maxAllowed, ...limit };
  return { replicas: desired, ...WITHIN };
}

/** Kubernetes' normalizeDesiredReplicas: the classic rules of an HPA without behavior. */
export function normalizeWithoutBehavior(h: HpaHistory, current: number, desired: number, min: number, max: number, now: number): Normalized {
  const stabilized = stabilizeRecommendation(h, desired, now);
  const ableToScale =
    stabilized !== desired
      ? { reason: "ScaleDownStabilized", message: "recent recommendations were higher than current one, applying the highest recent recommendation" }
      : READY;
  const c = convertDesiredReplicasWithRules(current, stabilized, min, max);
  return { replicas: c.replicas, ableToScale, limited: { status: c.replicas === stabilized ? "False" : "True", reason: c.reason, message: c.message } };
}

/** The windows of a behavior (the scale-down one defaults to the controller's 300 s). */
function windowsOf(b: HorizontalPodAutoscalerBehavior): { upMs: number; downMs: number } {
  return {
    upMs: (b.scaleUp?.stabilizationWindowSeconds ?? 0) * 1000,
    downMs: b.scaleDown?.stabilizationWindowSeconds !== undefined ? b.scaleDown.stabilizationWindowSeconds * 1000 : DOWNSCALE_STABILIZATION_MS,
  };
}

/**
 * Kubernetes' stabilizeRecommendationWithBehaviors: the recommendation is
 * held between the lowest of the scale-up window and the highest of the
 * scale-down window, starting from the current size.
 */
export function stabilizeWithBehaviors(
  h: HpaHistory,
  b: HorizontalPodAutoscalerBehavior,
  current: number,
  desired: number,
  now: number,
): { replicas: number } & Verdict {
  const { upMs, downMs } = windowsOf(b);
  const upCutoff = now - upMs;
  const downCutoff = now - downMs;
  let up = desired;
  let down = desired;
  for (const r of h.recommendations) {
    if (r.at > upCutoff) up = Math.min(r.replicas, up);
    if (r.at > downCutoff) down = Math.max(r.replicas, down);
  }
  let replicas = current;
  if (replicas < up) replicas = up;
  if (replicas > down) replicas = down;
  record(h, desired, now, (r) => r.at < upCutoff && r.at < downCutoff);
  return desired >= current
    ? { replicas, reason: "ScaleUpStabilized", message: "recent recommendations were lower than current one, applying the lowest recent recommendation" }
    : { replicas, reason: "ScaleDownStabilized", message: "recent recommendations were higher than current one, applying the highest recent recommendation" };
}

/** Kubernetes' getReplicasChangePerPeriod: the replicas changed by the events of the last period. */
export function changeInPeriod(periodSeconds: number, events: readonly ScaleEvent[], now: number): number {
  const cutoff = now - periodSeconds * 1000;
  let sum = 0;
  for (const e of events) if (e.at > cutoff) sum += e.change;
  return sum;
}

/** Kubernetes' calculateScaleUpLimitWithScalingRules: the most replicas the policies allow now. */
export function scaleUpLimit(current: number, events: readonly ScaleEvent[], rules: HPAScalingRules, now: number): number {
  const policy = rules.selectPolicy ?? "Max";
  if (policy === "Disabled") return current;
  const pick = policy === "Min" ? Math.min : Math.max;
  let result: number | undefined;
  for (const p of rules.policies) {
    const start = current - changeInPeriod(p.periodSeconds, events, now);
    const proposed = p.type === "Pods" ? start + p.value : Math.ceil(start * (1 + p.value / 100));
    result = result === undefined ? proposed : pick(result, proposed);
  }
  return result ?? current;
}

/** Kubernetes' calculateScaleDownLimitWithBehaviors: the fewest replicas the policies allow now. */
export function scaleDownLimit(current: number, events: readonly ScaleEvent[], rules: HPAScalingRules, now: number): number {
  const policy = rules.selectPolicy ?? "Max";
  if (policy === "Disabled") return current;
  const pick = policy === "Min" ? Math.max : Math.min;
  let result: number | undefined;
  for (const p of rules.policies) {
    const start = current + changeInPeriod(p.periodSeconds, events, now);
    const proposed = p.type === "Pods" ? start - p.value : Math.trunc(start * (1 - p.value / 100));
    result = result === undefined ? proposed : pick(result, proposed);
  }
  return result ?? current;
}

/** Kubernetes' convertDesiredReplicasWithBehaviorRate: min/max and the scaling policies. */
export function convertWithBehaviorRate(
  h: HpaHistory,
  b: HorizontalPodAutoscalerBehavior,
  current: number,
  desired: number,
  min: number,
  max: number,
  now: number,
): { replicas: number } & Verdict {
  if (desired > current) {
    const up = Math.max(scaleUpLimit(current, h.scaleUp, b.scaleUp ?? { policies: [] }, now), current);
    const [maxAllowed, limit] = max > up ? [up, UP_LIMIT] : [max, TOO_MANY];
    if (desired > maxAllowed) return { replicas: maxAllowed, ...limit };
  } else if (desired < current) {
    const down = Math.min(scaleDownLimit(current, h.scaleDown, b.scaleDown ?? { policies: [] }, now), current);
    const [minAllowed, limit] = min < down ? [down, DOWN_LIMIT] : [min, TOO_FEW];
    if (desired < minAllowed) return { replicas: minAllowed, ...limit };
  }
  return { replicas: desired, ...WITHIN };
}

/** Kubernetes' normalizeDesiredReplicasWithBehaviors: stabilize, then limit the rate. */
export function normalizeWithBehavior(
  h: HpaHistory,
  b: HorizontalPodAutoscalerBehavior,
  current: number,
  desired: number,
  min: number,
  max: number,
  now: number,
): Normalized {
  const s = stabilizeWithBehaviors(h, b, current, desired, now);
  const ableToScale = s.replicas !== desired ? { reason: s.reason, message: s.message } : READY;
  const c = convertWithBehaviorRate(h, b, current, s.replicas, min, max, now);
  return { replicas: c.replicas, ableToScale, limited: { status: c.replicas === s.replicas ? "False" : "True", reason: c.reason, message: c.message } };
}

/** Kubernetes' storeScaleEvent: a scale made, kept for the policies' periods (the slot of an outdated one reused). */
export function storeScaleEvent(h: HpaHistory, b: HorizontalPodAutoscalerBehavior | undefined, prev: number, next: number, now: number): void {
  if (!b) return;
  const up = next > prev;
  const rules = up ? b.scaleUp : b.scaleDown;
  const events = up ? h.scaleUp : h.scaleDown;
  const longest = Math.max(0, ...(rules?.policies ?? []).map((p) => p.periodSeconds));
  const cutoff = now - longest * 1000;
  for (const e of events) if (e.at < cutoff) e.outdated = true;
  const ev: ScaleEvent = { change: Math.abs(next - prev), at: now, outdated: false };
  const old = events.findLastIndex((e) => e.outdated);
  if (old >= 0) events[old] = ev;
  else events.push(ev);
}
