// The HorizontalPodAutoscaler controller, after Kubernetes' horizontal.go
// (reconcileAutoscaler): every 15 s (and when an HPA is created or its spec
// changes) per HPA — read the target's scale subresource, the pods of its
// selector (informer cache) and their usage from the Metrics API
// (metrics.k8s.io through the api), compute the replicas each metric asks for
// (replica-calculator.ts), keep them within min/max and the behavior
// (behavior.ts), write the scale, then the status (currentReplicas,
// desiredReplicas, currentMetrics, lastScaleTime, conditions AbleToScale,
// ScalingActive, ScalingLimited) and Events (SuccessfulRescale, …).
import { KINDS, isNotFound, keyOf } from "@choreo/kit";
import { parseLabelSelector, parseQuantity, type LabelSelector } from "@choreo/kit/apimachinery";
import type { ApiClient } from "@choreo/kit/client";
import { Controller, done, requeueAfter, type Result } from "@choreo/kit/controller";
import { objectRef, type EventRecorder } from "@choreo/kit/events";
import type {
  HorizontalPodAutoscaler,
  HorizontalPodAutoscalerCondition,
  HorizontalPodAutoscalerStatus,
  MetricSpec,
  MetricStatus,
  MetricTarget,
  MetricValueStatus,
} from "@choreo/kit/gen/choreo/autoscaling/v2/autoscaling";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { PodMetricsList } from "@choreo/kit/gen/choreo/metrics/v1beta1/metrics";
import { BY_NAMESPACE, namespaceOf, type Cache } from "@choreo/kit/informer";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import { Counter, type Registry } from "prom-client";
import { emptyHistory, normalizeWithBehavior, normalizeWithoutBehavior, recordInitialRecommendation, storeScaleEvent, type HpaHistory } from "./behavior.js";
import { CalcError, rawResourceReplicas, resourceReplicas, type CalcOptions, type CalcPod, type PodSample } from "./replica-calculator.js";

const HPA = { kind: "HorizontalPodAutoscaler", apiVersion: "autoscaling/v2" } as const;
/** Kubernetes' --horizontal-pod-autoscaler-sync-period default. */
export const SYNC_PERIOD_MS = 15_000;

/** Where the controller reads pods' usage: the Metrics API (kit's ApiClient.podMetrics). */
export interface MetricsSource {
  podMetrics(namespace: string, opts: { labelSelector?: string }): Promise<PodMetricsList>;
}

export interface HpaControllerOptions {
  client: Pick<ApiClient, "getScale" | "updateScale" | "updateStatus">;
  metrics: MetricsSource;
  hpas: Cache<HorizontalPodAutoscaler>;
  pods: Cache<Pod>;
  recorder?: Pick<EventRecorder, "emit"> | undefined;
  log: Logger;
  /** The clock (epoch ms); tests pass a fake one. */
  now?: () => number;
  syncPeriodMs?: number;
  calc?: CalcOptions;
  workers?: number;
  registry?: Registry;
  /** A fault point: called after the decision, right before the scale is written (the fault tests kill -9 the process here). */
  beforeScale?: (() => void) | undefined;
}

/** A Go duration as metrics-server writes the window ("15.002s", "1m0s"), in ms. */
export function goDurationMs(s: string): number {
  let ms = 0;
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 1e-3, µs: 1e-3, ns: 1e-6 };
  for (const m of s.matchAll(/(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/g)) ms += Number(m[1]) * (unit[m[2] ?? "s"] ?? 0);
  return ms;
}

/** One metric's outcome: replicas and status, or the condition and error that made it invalid. */
type MetricOutcome =
  { ok: true; replicas: number; name: string; status: MetricStatus } | { ok: false; condition: { reason: string; message: string }; error: string };

/** Kubernetes' setConditionInList: the condition replaced in place; its transition time moves only with its status. */
export function setCondition(list: HorizontalPodAutoscalerCondition[], type: string, status: string, reason: string, message: string, now: string): void {
  let c = list.find((x) => x.type === type);
  if (!c) {
    c = { type, status: "", lastTransitionTime: "", reason: "", message: "" };
    list.push(c);
  }
  if (c.status !== status) c.lastTransitionTime = now;
  c.status = status;
  c.reason = reason;
  c.message = message;
}

/** The resource of a scalable kind named by a scaleTargetRef (Kubernetes' RESTMapper on group and kind). */
function scaleResource(kind: string, apiVersion: string): string | undefined {
  const group = apiVersion.includes("/") ? (apiVersion.split("/")[0] ?? "") : "";
  return KINDS.find((k) => k.hasScale && k.kind === kind && k.group === group)?.resource;
}

function milli(q: string | undefined): number {
  if (!q) return 0;
  try {
    return Number(parseQuantity(q).milli);
  } catch {
    return 0;
  }
}

/** What the calculator reads of a pod; `container` limits the requests to one container (ContainerResource). */
export function calcPod(pod: Pod, resource: string, container = ""): CalcPod {
  const st = pod.status;
  const ready = st?.conditions.find((c) => c.type === "Ready");
  const spec = pod.spec;
  const containers = [...(spec?.containers ?? []), ...(spec?.initContainers ?? []).filter((c) => c.restartPolicy === "Always")];
  return {
    name: pod.metadata?.name ?? "",
    phase: st?.phase ?? "",
    deleting: !!pod.metadata?.deletionTimestamp,
    ready: ready ? { status: ready.status, lastTransitionMs: Date.parse(ready.lastTransitionTime) || 0 } : undefined,
    startMs: st?.startTime ? Date.parse(st.startTime) : undefined,
    requests: containers
      .filter((c) => container === "" || c.name === container)
      .map((c) => ({ container: c.name, milli: milli(c.resources?.requests[resource]) })),
  };
}

/** Kubernetes' metrics client getPodMetrics: a pod's usage of the resource, summed over its containers (or the one named); pods lacking it left out. */
export function podSamples(list: PodMetricsList, resource: string, container = ""): Map<string, PodSample> {
  const out = new Map<string, PodSample>();
  for (const m of list.items) {
    const containers = container === "" ? m.containers : m.containers.filter((c) => c.name === container);
    if (containers.length === 0 || containers.some((c) => c.usage[resource] === undefined)) continue;
    const sum = containers.reduce((acc, c) => acc + milli(c.usage[resource]), 0);
    out.set(m.metadata?.name ?? "", { milli: sum, timestampMs: Date.parse(m.timestamp) || 0, windowMs: goDurationMs(m.window) });
  }
  return out;
}

function valueStatus(v: Partial<MetricValueStatus>): MetricValueStatus {
  return { value: v.value, averageValue: v.averageValue, averageUtilization: v.averageUtilization };
}

export class HpaController implements Runnable {
  readonly name = "hpa-controller";
  readonly controller: Controller;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly period: number;
  /** Recommendations and scale events per HPA key (Kubernetes keeps them in memory too). */
  private readonly history = new Map<string, HpaHistory>();
  private readonly rescales?: Counter<"direction">;

  constructor(private readonly opts: HpaControllerOptions) {
    this.log = opts.log.child({ controller: "hpa" });
    this.now = opts.now ?? Date.now;
    this.period = opts.syncPeriodMs ?? SYNC_PERIOD_MS;
    this.controller = new Controller({
      name: "hpa",
      reconcile: (key) => this.reconcile(key),
      workers: opts.workers ?? 2,
      log: opts.log,
      registry: opts.registry,
    });
    if (opts.registry)
      this.rescales = new Counter({
        name: "choreo_hpa_rescales_total",
        help: "Scale subresource writes of the HPA controller, by direction (up, down).",
        labelNames: ["direction"],
        registers: [opts.registry],
      });
    opts.pods.addIndexer(BY_NAMESPACE, namespaceOf);
    const enqueue = (h: HorizontalPodAutoscaler): void => {
      if (h.metadata) this.controller.enqueue(keyOf(h.metadata));
    };
    // A status write (ours) is no reason to look again before the period; a new spec is.
    opts.hpas.addEventHandler({
      onAdd: enqueue,
      onUpdate: (o, n) => {
        if (o.metadata?.generation !== n.metadata?.generation) enqueue(n);
      },
      onDelete: (h) => {
        if (h.metadata) this.history.delete(keyOf(h.metadata));
      },
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    await Promise.all([this.opts.hpas.waitForSync(signal), this.opts.pods.waitForSync(signal)]);
    await this.controller.start(signal);
  }

  private emit(h: HorizontalPodAutoscaler, type: "Normal" | "Warning", reason: string, message: string): void {
    this.opts.recorder?.emit(objectRef(HPA.kind, HPA.apiVersion, h), type, reason, message);
  }

  async reconcile(key: string): Promise<Result> {
    const cached = this.opts.hpas.get(key);
    if (!cached?.metadata || !cached.spec) {
      this.history.delete(key);
      return done();
    }
    const hpa = structuredClone(cached);
    const original = JSON.stringify(hpa.status ?? {});
    const status: HorizontalPodAutoscalerStatus = hpa.status ?? {
      lastScaleTime: "",
      currentReplicas: 0,
      desiredReplicas: 0,
      currentMetrics: [],
      conditions: [],
    };
    hpa.status = status;
    try {
      await this.sync(key, hpa, status);
    } finally {
      if (JSON.stringify(status) !== original) await this.writeStatus(hpa);
    }
    return requeueAfter(this.period);
  }

  private async writeStatus(hpa: HorizontalPodAutoscaler): Promise<void> {
    try {
      await this.opts.client.updateStatus({ kind: { $case: "horizontalPodAutoscaler", value: hpa } });
    } catch (err) {
      if (isNotFound(err)) return;
      this.emit(hpa, "Warning", "FailedUpdateStatus", (err as Error).message);
      throw err;
    }
  }

  /** reconcileAutoscaler: `status` is changed in place. */
  private async sync(key: string, hpa: HorizontalPodAutoscaler, status: HorizontalPodAutoscalerStatus): Promise<void> {
    const spec = hpa.spec;
    if (!spec) return;
    const now = this.now();
    const nowIso = new Date(now).toISOString().replace(/\.\d{3}Z$/, "Z");
    const cond = (type: string, st: string, reason: string, message: string): void => setCondition(status.conditions, type, st, reason, message, nowIso);
    const namespace = hpa.metadata?.namespace ?? "";
    const ref = spec.scaleTargetRef ?? { kind: "", name: "", apiVersion: "" };
    const resource = scaleResource(ref.kind, ref.apiVersion);
    const failedGetScale = (message: string): void => {
      this.emit(hpa, "Warning", "FailedGetScale", message);
      cond("AbleToScale", "False", "FailedGetScale", `the HPA controller was unable to get the target's current scale: ${message}`);
    };
    if (!resource) {
      const group = ref.apiVersion.includes("/") ? ref.apiVersion.split("/")[0] : "";
      failedGetScale(`no matches for kind "${ref.kind}" in group "${group}"`);
      return;
    }
    let scale;
    try {
      scale = await this.opts.client.getScale(resource, namespace, ref.name);
    } catch (err) {
      failedGetScale((err as Error).message);
      return;
    }
    cond("AbleToScale", "True", "SucceededGetScale", "the HPA controller was able to get the target's current scale");
    const current = scale.spec?.replicas ?? 0;
    let history = this.history.get(key);
    if (!history) this.history.set(key, (history = emptyHistory()));
    recordInitialRecommendation(history, current, now);

    const min = spec.minReplicas ?? 1;
    let desired = 0;
    let reason = "";
    let rescale = true;
    let metricStatuses = status.currentMetrics;
    if (current === 0 && min !== 0) {
      rescale = false;
      cond("ScalingActive", "False", "ScalingDisabled", "scaling is disabled since the replica count of the target is zero");
    } else if (current > spec.maxReplicas) {
      reason = "Current number of replicas above Spec.MaxReplicas";
      desired = spec.maxReplicas;
    } else if (current < min) {
      reason = "Current number of replicas below Spec.MinReplicas";
      desired = min;
    } else {
      const computed = await this.computeReplicasForMetrics(hpa, scale.status?.selector ?? "", current, now, cond);
      metricStatuses = computed.statuses;
      if ("error" in computed) {
        status.currentReplicas = current;
        status.currentMetrics = metricStatuses;
        this.emit(hpa, "Warning", "FailedComputeMetricsReplicas", computed.error);
        this.log.info({ hpa: key, err: computed.error }, "hpa: no replica count from the metrics");
        return;
      }
      desired = computed.replicas;
      if (desired > current) reason = `${computed.metric} above target`;
      if (desired < current) reason = "All metrics below target";
      const n = spec.behavior
        ? normalizeWithBehavior(history, spec.behavior, current, desired, min, spec.maxReplicas, now)
        : normalizeWithoutBehavior(history, current, desired, min, spec.maxReplicas, now);
      cond("AbleToScale", "True", n.ableToScale.reason, n.ableToScale.message);
      cond("ScalingLimited", n.limited.status, n.limited.reason, n.limited.message);
      desired = n.replicas;
      rescale = desired !== current;
    }

    if (rescale) {
      this.opts.beforeScale?.();
      try {
        await this.opts.client.updateScale(resource, namespace, ref.name, desired);
      } catch (err) {
        const msg = (err as Error).message;
        this.emit(hpa, "Warning", "FailedRescale", `New size: ${desired}; reason: ${reason}; error: ${msg}`);
        cond("AbleToScale", "False", "FailedUpdateScale", `the HPA controller was unable to update the target scale: ${msg}`);
        status.currentReplicas = current;
        status.currentMetrics = metricStatuses;
        return;
      }
      cond("AbleToScale", "True", "SucceededRescale", `the HPA controller was able to update the target scale to ${desired}`);
      this.emit(hpa, "Normal", "SuccessfulRescale", `New size: ${desired}; reason: ${reason}`);
      storeScaleEvent(history, spec.behavior, current, desired, now);
      this.rescales?.inc({ direction: desired > current ? "up" : "down" });
      this.log.info({ hpa: key, target: `${ref.kind}/${ref.name}`, from: current, to: desired, reason }, "hpa: rescaled");
      status.lastScaleTime = nowIso;
    } else {
      desired = current;
    }
    status.currentReplicas = current;
    status.desiredReplicas = desired;
    status.currentMetrics = metricStatuses;
  }

  /** computeReplicasForMetrics: the largest proposal of the valid metrics, or the first invalid one's condition. */
  private async computeReplicasForMetrics(
    hpa: HorizontalPodAutoscaler,
    selectorString: string,
    specReplicas: number,
    now: number,
    cond: (type: string, st: string, reason: string, message: string) => void,
  ): Promise<{ replicas: number; metric: string; statuses: MetricStatus[] } | { error: string; statuses: MetricStatus[] }> {
    const metrics = hpa.spec?.metrics ?? [];
    if (selectorString === "") {
      this.emit(hpa, "Warning", "SelectorRequired", "selector is required");
      cond("ScalingActive", "False", "InvalidSelector", "the HPA target's scale is missing a selector");
      return { error: "selector is required", statuses: [] };
    }
    let selector: LabelSelector;
    try {
      selector = parseLabelSelector(selectorString);
    } catch (err) {
      const msg = `couldn't convert selector into a corresponding internal selector object: ${(err as Error).message}`;
      this.emit(hpa, "Warning", "InvalidSelector", msg);
      cond("ScalingActive", "False", "InvalidSelector", msg);
      return { error: msg, statuses: [] };
    }
    const namespace = hpa.metadata?.namespace ?? "";
    const pods = this.opts.pods.byIndex(BY_NAMESPACE, namespace).filter((p) => selector.matches(p.metadata?.labels));
    const statuses: MetricStatus[] = [];
    let replicas = 0;
    let metric = "";
    let invalid = 0;
    let firstInvalid: Extract<MetricOutcome, { ok: false }> | undefined;
    for (const spec of metrics) {
      const o = await this.computeReplicasForMetric(hpa, spec, specReplicas, selectorString, pods, now);
      if (!o.ok) {
        if (invalid === 0) firstInvalid = o;
        invalid++;
        statuses.push({ type: "", object: undefined, pods: undefined, resource: undefined, containerResource: undefined, external: undefined });
        continue;
      }
      statuses.push(o.status);
      if (replicas === 0 || o.replicas > replicas) {
        replicas = o.replicas;
        metric = o.name;
      }
    }
    if (firstInvalid && (invalid >= metrics.length || replicas < specReplicas)) {
      cond("ScalingActive", "False", firstInvalid.condition.reason, firstInvalid.condition.message);
      return { error: `invalid metrics (${invalid} invalid out of ${metrics.length}), first error is: ${firstInvalid.error}`, statuses };
    }
    cond("ScalingActive", "True", "ValidMetricFound", `the HPA was able to successfully calculate a replica count from ${metric}`);
    return { replicas, metric, statuses };
  }

  /** computeReplicasForMetric: Resource and ContainerResource from the Metrics API; the custom and external metrics APIs are not served. */
  private async computeReplicasForMetric(
    hpa: HorizontalPodAutoscaler,
    spec: MetricSpec,
    specReplicas: number,
    selector: string,
    pods: Pod[],
    now: number,
  ): Promise<MetricOutcome> {
    const unable = (reason: string, err: string, wrapped: string): MetricOutcome => {
      this.emit(hpa, "Warning", reason, err);
      return { ok: false, condition: { reason, message: `the HPA was unable to compute the replica count: ${err}` }, error: wrapped };
    };
    const source = spec.type === "Resource" ? spec.resource : spec.type === "ContainerResource" ? spec.containerResource : undefined;
    if (source) {
      const container = spec.type === "ContainerResource" ? (spec.containerResource?.container ?? "") : "";
      const reason = spec.type === "Resource" ? "FailedGetResourceMetric" : "FailedGetContainerResourceMetric";
      const wrap = (e: string): string => `failed to get ${source.name} ${spec.type === "Resource" ? "resource" : "container"} metric value: ${e}`;
      const r = await this.resourceMetric(hpa, source.name, source.target, container, specReplicas, selector, pods, now);
      if ("error" in r) return unable(reason, r.error, wrap(r.error));
      const current = valueStatus(r.current);
      const status: MetricStatus =
        spec.type === "Resource"
          ? {
              type: "Resource",
              resource: { name: source.name, current },
              object: undefined,
              pods: undefined,
              containerResource: undefined,
              external: undefined,
            }
          : {
              type: "ContainerResource",
              containerResource: { name: source.name, container, current },
              object: undefined,
              pods: undefined,
              resource: undefined,
              external: undefined,
            };
      return { ok: true, replicas: r.replicas, name: r.name, status };
    }
    const reasons: Record<string, string> = { Pods: "FailedGetPodsMetric", Object: "FailedGetObjectMetric", External: "FailedGetExternalMetric" };
    const reason = reasons[spec.type];
    if (!reason) {
      const err = `unknown metric source type "${spec.type}"`;
      return unable("InvalidMetricSourceType", err, err);
    }
    const err = `unable to get metric: the ${spec.type === "External" ? "external.metrics.k8s.io" : "custom.metrics.k8s.io"} API is not served`;
    return unable(reason, err, `failed to get ${spec.type.toLowerCase()} metric value: ${err}`);
  }

  /** computeStatusForResourceMetricGeneric. */
  private async resourceMetric(
    hpa: HorizontalPodAutoscaler,
    resource: string,
    target: MetricTarget | undefined,
    container: string,
    specReplicas: number,
    selector: string,
    pods: Pod[],
    now: number,
  ): Promise<{ replicas: number; name: string; current: Partial<MetricValueStatus> } | { error: string }> {
    const raw = target?.averageValue !== undefined;
    if (!raw && target?.averageUtilization === undefined)
      return { error: "invalid resource metric source: neither an average utilization target nor an average value (usage) target was set" };
    const what = raw ? "usage" : "utilization";
    let samples: Map<string, PodSample>;
    try {
      const list = await this.opts.metrics.podMetrics(hpa.metadata?.namespace ?? "", { labelSelector: selector });
      if (list.items.length === 0) throw new CalcError("no metrics returned from resource metrics API");
      samples = podSamples(list, resource, container);
    } catch (err) {
      return { error: `failed to get ${resource} ${what}: unable to get metrics for resource ${resource}: ${(err as Error).message}` };
    }
    const calcPods = pods.map((p) => calcPod(p, resource, container));
    try {
      if (raw) {
        const c = rawResourceReplicas(specReplicas, milli(target.averageValue), resource, calcPods, samples, now, this.opts.calc);
        return { replicas: c.replicas, name: `${resource} resource`, current: { averageValue: `${c.rawAverageMilli}m` } };
      }
      const c = resourceReplicas(specReplicas, target?.averageUtilization ?? 0, resource, calcPods, samples, now, this.opts.calc);
      return {
        replicas: c.replicas,
        name: container ? `${resource} container resource utilization (percentage of request)` : `${resource} resource utilization (percentage of request)`,
        current: { averageUtilization: c.utilization, averageValue: `${c.rawAverageMilli}m` },
      };
    } catch (err) {
      if (!(err instanceof CalcError)) throw err;
      return { error: `failed to get ${resource} ${what}: ${err.message}` };
    }
  }
}
