// The replica calculator of the HPA, as Kubernetes' (pkg/controller/
// podautoscaler/replica_calculator.go): from the pods of the target, their
// requests and their metrics, the replicas a resource metric asks for.
// Pure: pods and metrics come in as plain values, the clock as `now`.

/** What the calculator reads of a pod. */
export interface CalcPod {
  readonly name: string;
  /** Pending, Running, Succeeded, Failed, Unknown. */
  readonly phase: string;
  /** Has a deletionTimestamp. */
  readonly deleting: boolean;
  /** The Ready condition; undefined when the pod has none. */
  readonly ready?: { readonly status: string; readonly lastTransitionMs: number } | undefined;
  /** status.startTime (epoch ms); undefined when not started. */
  readonly startMs?: number | undefined;
  /**
   * The request of the resource per container that counts (every regular
   * container and restartable init container, or the one named), in milli
   * units; a container without one is listed with 0.
   */
  readonly requests: readonly { readonly container: string; readonly milli: number }[];
}

/** One pod's sample: the resource's usage (milli units) at a time over a window. */
export interface PodSample {
  readonly milli: number;
  readonly timestampMs: number;
  readonly windowMs: number;
}

/** Kubernetes' defaults of the HPA controller's flags. */
export const DEFAULT_TOLERANCE = 0.1;
export const CPU_INITIALIZATION_PERIOD_MS = 5 * 60_000;
export const INITIAL_READINESS_DELAY_MS = 30_000;

export interface CalcOptions {
  readonly tolerance?: number;
  readonly cpuInitializationPeriodMs?: number;
  readonly initialReadinessDelayMs?: number;
}

/** A metric the calculator could not turn into replicas; the message is Kubernetes' error text. */
export class CalcError extends Error {}

/** The calculator's answer for one metric. */
export interface Calculation {
  readonly replicas: number;
  /** Average utilization in percent of the requests (Utilization targets). */
  readonly utilization: number;
  /** Average usage per pod in milli units. */
  readonly rawAverageMilli: number;
}

interface Groups {
  readyCount: number;
  unready: Set<string>;
  missing: Set<string>;
  ignored: Set<string>;
}

/** Kubernetes' groupPods: ready pods with metrics, unready (Pending, or CPU not yet settled), missing (no sample) and ignored (deleted, Failed). */
export function groupPods(pods: readonly CalcPod[], samples: ReadonlyMap<string, PodSample>, resource: string, now: number, opts: CalcOptions = {}): Groups {
  const init = opts.cpuInitializationPeriodMs ?? CPU_INITIALIZATION_PERIOD_MS;
  const delay = opts.initialReadinessDelayMs ?? INITIAL_READINESS_DELAY_MS;
  const g: Groups = { readyCount: 0, unready: new Set(), missing: new Set(), ignored: new Set() };
  for (const pod of pods) {
    if (pod.deleting || pod.phase === "Failed") {
      g.ignored.add(pod.name);
      continue;
    }
    if (pod.phase === "Pending") {
      g.unready.add(pod.name);
      continue;
    }
    const sample = samples.get(pod.name);
    if (!sample) {
      g.missing.add(pod.name);
      continue;
    }
    if (resource === "cpu") {
      let unready: boolean;
      const cond = pod.ready;
      if (!cond || pod.startMs === undefined) unready = true;
      else if (pod.startMs + init > now)
        // Within the initialization period: unready, or no full window sampled since the last readiness change.
        unready = cond.status === "False" || sample.timestampMs < cond.lastTransitionMs + sample.windowMs;
      // After it: unready only if it has never been ready.
      else unready = cond.status === "False" && pod.startMs + delay > cond.lastTransitionMs;
      if (unready) {
        g.unready.add(pod.name);
        continue;
      }
    }
    g.readyCount++;
  }
  return g;
}

/** Kubernetes' calculateRequests: the pods' summed requests (milli); a container without one is an error. */
export function podRequests(pods: readonly CalcPod[], resource: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const pod of pods) {
    let sum = 0;
    for (const r of pod.requests) {
      if (r.milli === 0) throw new CalcError(`missing request for ${resource} in container ${r.container} of Pod ${pod.name}`);
      sum += r.milli;
    }
    out.set(pod.name, sum);
  }
  return out;
}

/** Kubernetes' GetResourceUtilizationRatio: usage over requests of the pods with both. */
export function utilizationRatio(
  usage: ReadonlyMap<string, number>,
  requests: ReadonlyMap<string, number>,
  targetUtilization: number,
): { ratio: number; utilization: number; rawAverageMilli: number } {
  let usageTotal = 0;
  let requestsTotal = 0;
  let n = 0;
  for (const [pod, milli] of usage) {
    const req = requests.get(pod);
    if (req === undefined) continue;
    usageTotal += milli;
    requestsTotal += req;
    n++;
  }
  if (requestsTotal === 0) throw new CalcError("no metrics returned matched known pods");
  const utilization = Math.trunc((usageTotal * 100) / requestsTotal);
  return { ratio: utilization / targetUtilization, utilization, rawAverageMilli: Math.trunc(usageTotal / n) };
}

/** Kubernetes' GetResourceReplicas: the replicas for a target utilization (percent of the requests). */
export function resourceReplicas(
  currentReplicas: number,
  targetUtilization: number,
  resource: string,
  pods: readonly CalcPod[],
  samples: ReadonlyMap<string, PodSample>,
  now: number,
  opts: CalcOptions = {},
): Calculation {
  const tolerance = opts.tolerance ?? DEFAULT_TOLERANCE;
  if (pods.length === 0) throw new CalcError("no pods returned by selector while calculating replica count");
  const g = groupPods(pods, samples, resource, now, opts);
  const usage = new Map<string, number>();
  for (const [name, s] of samples) if (!g.ignored.has(name) && !g.unready.has(name)) usage.set(name, s.milli);
  const requests = podRequests(pods, resource);
  if (usage.size === 0) throw new CalcError("did not receive metrics for targeted pods (pods might be unready)");
  const first = utilizationRatio(usage, requests, targetUtilization);
  const result = (replicas: number): Calculation => ({ replicas, utilization: first.utilization, rawAverageMilli: first.rawAverageMilli });
  const scaleUpWithUnready = g.unready.size > 0 && first.ratio > 1;
  if (!scaleUpWithUnready && g.missing.size === 0) {
    if (Math.abs(1 - first.ratio) <= tolerance) return result(currentReplicas);
    return result(Math.ceil(first.ratio * g.readyCount));
  }
  if (g.missing.size > 0) {
    if (first.ratio < 1) {
      // On a scale-down a pod without a sample counts as using its whole request (or the target, above 100 %).
      const fallback = Math.max(100, targetUtilization);
      for (const name of g.missing) usage.set(name, Math.trunc(((requests.get(name) ?? 0) * fallback) / 100));
    } else if (first.ratio > 1) {
      // On a scale-up, as using nothing.
      for (const name of g.missing) usage.set(name, 0);
    }
  }
  if (scaleUpWithUnready) for (const name of g.unready) usage.set(name, 0);
  const second = utilizationRatio(usage, requests, targetUtilization).ratio;
  // Too small a change, or one the other way: stay.
  if (Math.abs(1 - second) <= tolerance || (first.ratio < 1 && second > 1) || (first.ratio > 1 && second < 1)) return result(currentReplicas);
  const replicas = Math.ceil(second * usage.size);
  if ((second < 1 && replicas > currentReplicas) || (second > 1 && replicas < currentReplicas)) return result(currentReplicas);
  return result(replicas);
}

/** Kubernetes' GetRawResourceReplicas (calcPlainMetricReplicas): the replicas for a target average usage per pod (milli). */
export function rawResourceReplicas(
  currentReplicas: number,
  targetAverageMilli: number,
  resource: string,
  pods: readonly CalcPod[],
  samples: ReadonlyMap<string, PodSample>,
  now: number,
  opts: CalcOptions = {},
): Calculation {
  const tolerance = opts.tolerance ?? DEFAULT_TOLERANCE;
  if (pods.length === 0) throw new CalcError("no pods returned by selector while calculating replica count");
  const g = groupPods(pods, samples, resource, now, opts);
  const usage = new Map<string, number>();
  for (const [name, s] of samples) if (!g.ignored.has(name) && !g.unready.has(name)) usage.set(name, s.milli);
  if (usage.size === 0) throw new CalcError("did not receive metrics for targeted pods (pods might be unready)");
  // Kubernetes' GetMetricUsageRatio.
  const ratioOf = (m: ReadonlyMap<string, number>): { ratio: number; average: number } => {
    let total = 0;
    for (const v of m.values()) total += v;
    const average = Math.trunc(total / m.size);
    return { ratio: average / targetAverageMilli, average };
  };
  const first = ratioOf(usage);
  const result = (replicas: number): Calculation => ({ replicas, utilization: 0, rawAverageMilli: first.average });
  const scaleUpWithUnready = g.unready.size > 0 && first.ratio > 1;
  if (!scaleUpWithUnready && g.missing.size === 0) {
    if (Math.abs(1 - first.ratio) <= tolerance) return result(currentReplicas);
    return result(Math.ceil(first.ratio * g.readyCount));
  }
  if (g.missing.size > 0) {
    if (first.ratio < 1) for (const name of g.missing) usage.set(name, targetAverageMilli);
    else for (const name of g.missing) usage.set(name, 0);
  }
  if (scaleUpWithUnready) for (const name of g.unready) usage.set(name, 0);
  const second = ratioOf(usage).ratio;
  if (Math.abs(1 - second) <= tolerance || (first.ratio < 1 && second > 1) || (first.ratio > 1 && second < 1)) return result(currentReplicas);
  const replicas = Math.ceil(second * usage.size);
  if ((second < 1 && replicas > currentReplicas) || (second > 1 && replicas < currentReplicas)) return result(currentReplicas);
  return result(replicas);
}
