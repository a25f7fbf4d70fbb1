// HorizontalPodAutoscaler (autoscaling/v2): Kubernetes' defaults
// (SetDefaults_HorizontalPodAutoscaler: minReplicas 1, 80 % CPU when no
// metric is given, a given behavior completed with the default rules) and
// validation (pkg/apis/autoscaling/validation ValidateHorizontalPodAutoscaler).
import { fieldError } from "@choreo/kit";
import { parseQuantity } from "@choreo/kit/apimachinery";
import {
  HorizontalPodAutoscalerStatus,
  MetricSpec,
  type HPAScalingPolicy,
  type HPAScalingRules,
  type HorizontalPodAutoscaler,
  type HorizontalPodAutoscalerSpec,
  type MetricIdentifier,
  type MetricTarget,
} from "@choreo/kit/gen/choreo/autoscaling/v2/autoscaling";
import type { Strategy } from "../generic/strategy.js";
import { Errors } from "../shared/validation.js";

/** Kubernetes' DefaultCPUUtilization: the target when an HPA names no metric. */
export const DEFAULT_CPU_UTILIZATION = 80;
export const MAX_PERIOD_SECONDS = 1800;
export const MAX_STABILIZATION_WINDOW_SECONDS = 3600;

/** Scale up: the larger of 4 pods or 100 % per 15 s, no stabilization (Kubernetes' defaultHPAScaleUpRules). */
export function defaultScaleUpRules(): HPAScalingRules {
  return {
    stabilizationWindowSeconds: 0,
    selectPolicy: "Max",
    policies: [
      { type: "Pods", value: 4, periodSeconds: 15 },
      { type: "Percent", value: 100, periodSeconds: 15 },
    ],
  };
}

/** Scale down: 100 % per 15 s; the window is left unset, the controller's 300 s applies (Kubernetes' defaultHPAScaleDownRules). */
export function defaultScaleDownRules(): HPAScalingRules {
  return { stabilizationWindowSeconds: undefined, selectPolicy: "Max", policies: [{ type: "Percent", value: 100, periodSeconds: 15 }] };
}

/** The given rules over the defaults, field by field (Kubernetes' copyHPAScalingRules). */
export function completeRules(given: HPAScalingRules | undefined, defaults: HPAScalingRules): HPAScalingRules {
  if (!given) return defaults;
  return {
    stabilizationWindowSeconds: given.stabilizationWindowSeconds ?? defaults.stabilizationWindowSeconds,
    selectPolicy: given.selectPolicy ?? defaults.selectPolicy,
    policies: given.policies.length > 0 ? given.policies : defaults.policies,
  };
}

function defaults(h: HorizontalPodAutoscaler): void {
  const spec = h.spec;
  if (!spec) return;
  spec.minReplicas ??= 1;
  if (spec.metrics.length === 0)
    spec.metrics = [
      MetricSpec.fromPartial({
        type: "Resource",
        resource: { name: "cpu", target: { type: "Utilization", averageUtilization: DEFAULT_CPU_UTILIZATION } },
      }),
    ];
  // Only a behavior that is given is completed: without one the controller keeps its classic rules.
  if (spec.behavior) {
    spec.behavior.scaleUp = completeRules(spec.behavior.scaleUp, defaultScaleUpRules());
    spec.behavior.scaleDown = completeRules(spec.behavior.scaleDown, defaultScaleDownRules());
  }
}

/** Kubernetes' IsValidPathSegmentName: a name that can sit in a URL path. */
function pathSegmentErrors(name: string): string[] {
  if (name === ".") return ["may not be '.'"];
  if (name === "..") return ["may not be '..'"];
  const out: string[] = [];
  if (name.includes("/")) out.push("may not contain '/'");
  if (name.includes("%")) out.push("may not contain '%'");
  return out;
}

function required(e: Errors, path: string, detail: string): void {
  e.causes.push(fieldError(path, "FieldValueRequired", detail ? `Required value: ${detail}` : "Required value"));
}

/** A positive quantity's check: an error when it does not parse or is not above zero (Kubernetes' Sign() != 1). */
function positiveQuantity(e: Errors, path: string, q: string): void {
  let nano: bigint;
  try {
    nano = parseQuantity(q).nano;
  } catch (err) {
    e.invalid(path, q, (err as Error).message);
    return;
  }
  if (nano <= 0n) e.invalid(path, q, "must be positive");
}

function validateCrossVersionObjectReference(e: Errors, ref: { kind: string; name: string } | undefined, path: string): void {
  const kind = ref?.kind ?? "";
  const name = ref?.name ?? "";
  if (kind === "") required(e, `${path}.kind`, "");
  else for (const m of pathSegmentErrors(kind)) e.invalid(`${path}.kind`, kind, m);
  if (name === "") required(e, `${path}.name`, "");
  else for (const m of pathSegmentErrors(name)) e.invalid(`${path}.name`, name, m);
}

function validateMetricTarget(e: Errors, t: MetricTarget | undefined, path: string): void {
  const type = t?.type ?? "";
  if (type === "") required(e, `${path}.type`, "must specify a metric target type");
  if (type !== "Utilization" && type !== "Value" && type !== "AverageValue")
    e.invalid(`${path}.type`, type, "must be either Utilization, Value, or AverageValue");
  if (t?.value !== undefined) positiveQuantity(e, `${path}.value`, t.value);
  if (t?.averageValue !== undefined) positiveQuantity(e, `${path}.averageValue`, t.averageValue);
  if (t?.averageUtilization !== undefined && t.averageUtilization < 1) e.invalid(`${path}.averageUtilization`, t.averageUtilization, "must be greater than 0");
}

function validateMetricIdentifier(e: Errors, id: MetricIdentifier | undefined, path: string): void {
  const name = id?.name ?? "";
  if (name === "") required(e, `${path}.name`, "must specify a metric name");
  else for (const m of pathSegmentErrors(name)) e.invalid(`${path}.name`, name, m);
}

const METRIC_SOURCE_TYPES = ["ContainerResource", "External", "Object", "Pods", "Resource"] as const;
const FIELD_OF_TYPE: Record<string, "object" | "pods" | "resource" | "external" | "containerResource"> = {
  Object: "object",
  Pods: "pods",
  Resource: "resource",
  External: "external",
  ContainerResource: "containerResource",
};

function validateMetricSpec(e: Errors, m: MetricSpec, path: string): void {
  if (m.type === "") required(e, `${path}.type`, "must specify a metric source type");
  const present: string[] = [];
  if (m.object) {
    present.push("object");
    if (present.length === 1) {
      validateCrossVersionObjectReference(e, m.object.describedObject, `${path}.object.describedObject`);
      validateMetricIdentifier(e, m.object.metric, `${path}.object.metric`);
      validateMetricTarget(e, m.object.target, `${path}.object.target`);
      if (m.object.target?.value === undefined && m.object.target?.averageValue === undefined)
        required(e, `${path}.object.target.averageValue`, "must set either a target value or averageValue");
    }
  }
  if (m.external) {
    present.push("external");
    if (present.length === 1) {
      validateMetricIdentifier(e, m.external.metric, `${path}.external.metric`);
      validateMetricTarget(e, m.external.target, `${path}.external.target`);
      const t = m.external.target;
      if (t?.value === undefined && t?.averageValue === undefined)
        required(e, `${path}.external.target.averageValue`, "must set either a target value for metric or a per-pod target");
      if (t?.value !== undefined && t.averageValue !== undefined)
        e.forbidden(`${path}.external.target.value`, "may not set both a target value for metric and a per-pod target");
    }
  }
  if (m.pods) {
    present.push("pods");
    if (present.length === 1) {
      validateMetricIdentifier(e, m.pods.metric, `${path}.pods.metric`);
      validateMetricTarget(e, m.pods.target, `${path}.pods.target`);
      if (m.pods.target?.averageValue === undefined) required(e, `${path}.pods.target.averageValue`, "must specify a positive target averageValue");
    }
  }
  if (m.resource) {
    present.push("resource");
    if (present.length === 1) {
      if (m.resource.name === "") required(e, `${path}.resource.name`, "must specify a resource name");
      validateResourceTarget(e, m.resource.target, `${path}.resource.target`);
    }
  }
  if (m.containerResource) {
    present.push("containerResource");
    if (present.length === 1) {
      if (m.containerResource.name === "") required(e, `${path}.containerResource.name`, "must specify a resource name");
      if (m.containerResource.container === "") required(e, `${path}.containerResource.container`, "must specify a container");
      validateResourceTarget(e, m.containerResource.target, `${path}.containerResource.target`);
    }
  }
  const expected = FIELD_OF_TYPE[m.type];
  if (expected === undefined) e.notSupported(`${path}.type`, m.type, METRIC_SOURCE_TYPES);
  else if (!present.includes(expected)) required(e, `${path}.${expected}`, "must populate information for the given metric source");
  if (present.length !== 1) for (const p of present) if (p !== expected) e.forbidden(`${path}.${p}`, "must populate the given metric source only");
}

function validateResourceTarget(e: Errors, t: MetricTarget | undefined, path: string): void {
  validateMetricTarget(e, t, path);
  if (t?.averageUtilization === undefined && t?.averageValue === undefined)
    required(e, `${path}.averageUtilization`, "must set either a target raw value or a target utilization");
  if (t?.averageUtilization !== undefined && t.averageValue !== undefined)
    e.forbidden(`${path}.averageValue`, "may not set both a target raw value and a target utilization");
}

function validatePolicy(e: Errors, p: HPAScalingPolicy, path: string): void {
  if (p.type !== "Pods" && p.type !== "Percent") e.notSupported(`${path}.type`, p.type, ["Percent", "Pods"]);
  if (p.value <= 0) e.invalid(`${path}.value`, p.value, "must be greater than zero");
  if (p.periodSeconds <= 0) e.invalid(`${path}.periodSeconds`, p.periodSeconds, "must be greater than zero");
  if (p.periodSeconds > MAX_PERIOD_SECONDS) e.invalid(`${path}.periodSeconds`, p.periodSeconds, `must be less than or equal to ${MAX_PERIOD_SECONDS}`);
}

function validateRules(e: Errors, r: HPAScalingRules | undefined, path: string): void {
  if (!r) return;
  const w = r.stabilizationWindowSeconds;
  if (w !== undefined && w < 0) e.invalid(`${path}.stabilizationWindowSeconds`, w, "must be greater than or equal to zero");
  if (w !== undefined && w > MAX_STABILIZATION_WINDOW_SECONDS)
    e.invalid(`${path}.stabilizationWindowSeconds`, w, `must be less than or equal to ${MAX_STABILIZATION_WINDOW_SECONDS}`);
  if (r.selectPolicy !== undefined) e.oneOf(`${path}.selectPolicy`, r.selectPolicy, ["Disabled", "Max", "Min"]);
  if (r.policies.length === 0) required(e, `${path}.policies`, "must specify at least one Policy");
  r.policies.forEach((p, i) => validatePolicy(e, p, `${path}.policies[${i}]`));
}

/** Field errors of an HPA's spec (Kubernetes' validateHorizontalPodAutoscalerSpec, minReplicas at least 1: no HPAScaleToZero). */
export function validateHpaSpec(e: Errors, spec: HorizontalPodAutoscalerSpec, path: string): void {
  if (spec.minReplicas !== undefined && spec.minReplicas < 1) e.invalid(`${path}.minReplicas`, spec.minReplicas, "must be greater than or equal to 1");
  if (spec.maxReplicas < 1) e.invalid(`${path}.maxReplicas`, spec.maxReplicas, "must be greater than 0");
  if (spec.minReplicas !== undefined && spec.maxReplicas < spec.minReplicas)
    e.invalid(`${path}.maxReplicas`, spec.maxReplicas, "must be greater than or equal to `minReplicas`");
  validateCrossVersionObjectReference(e, spec.scaleTargetRef, `${path}.scaleTargetRef`);
  spec.metrics.forEach((m, i) => validateMetricSpec(e, m, `${path}.metrics[${i}]`));
  if (spec.behavior) {
    validateRules(e, spec.behavior.scaleUp, `${path}.behavior.scaleUp`);
    validateRules(e, spec.behavior.scaleDown, `${path}.behavior.scaleDown`);
  }
}

/** HorizontalPodAutoscaler: the replicas of a scalable kind from its pods' metrics. */
export const horizontalPodAutoscalerStrategy: Strategy<HorizontalPodAutoscaler> = {
  prepareCreate(h) {
    // As Kubernetes' PrepareForCreate: a new object's status is the controller's to write.
    h.status = HorizontalPodAutoscalerStatus.fromPartial({});
    defaults(h);
  },
  prepareUpdate(h) {
    defaults(h);
  },
  validate(h) {
    const e = new Errors();
    if (!h.spec) {
      e.required("spec", undefined);
      return e.causes;
    }
    validateHpaSpec(e, h.spec, "spec");
    return e.causes;
  },
};
