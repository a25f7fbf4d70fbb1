// Deployment (apps/v1): Kubernetes' defaults (SetDefaults_Deployment) and
// validation (pkg/apis/apps/validation ValidateDeployment*).
import { DeploymentStatus, type Deployment, type DeploymentStrategy, type RollingUpdateDeployment } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { IntOrString } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Strategy } from "../generic/strategy.js";
import { defaultPodSpec } from "../pods/pod-spec.js";
import { canonicalJson } from "../shared/canonical.js";
import { Errors } from "../shared/validation.js";
import { selectorImmutable, validateAppsSelector, validateAppsTemplate } from "./replicaset.js";

const percent = (v: string): IntOrString => ({ value: { $case: "strVal", value: v } });

// Kubernetes' IsValidPercent.
export const PERCENT = /^[0-9]+%$/;
const PERCENT_MSG = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/** An IntOrString as its JSON value (a number or a string), for messages. */
function shown(v: IntOrString | undefined): number | string {
  return v?.value?.value ?? 0;
}

/** The number of an int, or of a valid percentage; 0 otherwise (Kubernetes' getIntOrPercentValue). */
export function intOrPercent(v: IntOrString | undefined): number {
  const val = v?.value;
  if (!val) return 0;
  if (val.$case === "intVal") return val.value;
  return PERCENT.test(val.value) ? Number(val.value.slice(0, -1)) : 0;
}

export function positiveIntOrPercent(e: Errors, v: IntOrString | undefined, path: string): void {
  const val = v?.value;
  if (val?.$case === "strVal" && !PERCENT.test(val.value)) e.invalid(path, val.value, PERCENT_MSG);
  if (val?.$case === "intVal") e.nonNegative(path, val.value);
}

function validateRollingUpdate(e: Errors, ru: RollingUpdateDeployment, path: string): void {
  positiveIntOrPercent(e, ru.maxUnavailable, `${path}.maxUnavailable`);
  positiveIntOrPercent(e, ru.maxSurge, `${path}.maxSurge`);
  if (intOrPercent(ru.maxUnavailable) === 0 && intOrPercent(ru.maxSurge) === 0)
    e.invalid(`${path}.maxUnavailable`, shown(ru.maxUnavailable), "may not be 0 when `maxSurge` is 0");
  const mu = ru.maxUnavailable?.value;
  if (mu?.$case === "strVal" && PERCENT.test(mu.value) && intOrPercent(ru.maxUnavailable) > 100)
    e.invalid(`${path}.maxUnavailable`, mu.value, "must not be greater than 100%");
}

function validateStrategy(e: Errors, s: DeploymentStrategy | undefined, path: string): void {
  switch (s?.type) {
    case "Recreate":
      if (s.rollingUpdate) e.forbidden(`${path}.rollingUpdate`, "may not be specified when strategy `type` is 'Recreate'");
      break;
    case "RollingUpdate":
      if (!s.rollingUpdate) e.required(`${path}.rollingUpdate`, undefined);
      else validateRollingUpdate(e, s.rollingUpdate, `${path}.rollingUpdate`);
      break;
    default:
      e.notSupported(path, s ?? {}, ["Recreate", "RollingUpdate"]);
  }
}

function defaults(d: Deployment): void {
  const spec = d.spec;
  if (!spec) return;
  spec.replicas ??= 1;
  spec.strategy ??= { type: "", rollingUpdate: undefined };
  spec.strategy.type ||= "RollingUpdate";
  if (spec.strategy.type === "RollingUpdate") {
    spec.strategy.rollingUpdate ??= { maxUnavailable: undefined, maxSurge: undefined };
    spec.strategy.rollingUpdate.maxUnavailable ??= percent("25%");
    spec.strategy.rollingUpdate.maxSurge ??= percent("25%");
  }
  spec.revisionHistoryLimit ??= 10;
  spec.progressDeadlineSeconds ??= 600;
  if (spec.template?.spec) defaultPodSpec(spec.template.spec);
}

/** Deployment: the pods of an application, rolled out through ReplicaSets. */
export const deploymentStrategy: Strategy<Deployment> = {
  prepareCreate(d) {
    // As Kubernetes' PrepareForCreate: a new object's status is the controller's to write.
    d.status = DeploymentStatus.fromPartial({});
    defaults(d);
  },
  prepareUpdate(d, old) {
    defaults(d);
    // As Kubernetes: an annotation change is a new generation too (the controller copies annotations to the ReplicaSets).
    if (d.metadata && canonicalJson(d.metadata.annotations) !== canonicalJson(old.metadata?.annotations ?? {}))
      d.metadata.generation = (old.metadata?.generation ?? 0) + 1;
  },
  validate(d, old) {
    const e = new Errors();
    const spec = d.spec;
    if (!spec) {
      e.required("spec", undefined);
      return e.causes;
    }
    e.nonNegative("spec.replicas", spec.replicas);
    const selector = validateAppsSelector(e, spec.selector, "spec.selector", "deployment");
    validateAppsTemplate(e, spec.template, "spec.template", selector);
    validateStrategy(e, spec.strategy, "spec.strategy");
    e.nonNegative("spec.minReadySeconds", spec.minReadySeconds);
    e.nonNegative("spec.revisionHistoryLimit", spec.revisionHistoryLimit);
    if (spec.progressDeadlineSeconds !== undefined) {
      e.nonNegative("spec.progressDeadlineSeconds", spec.progressDeadlineSeconds);
      if (spec.progressDeadlineSeconds <= spec.minReadySeconds)
        e.invalid("spec.progressDeadlineSeconds", spec.progressDeadlineSeconds, "must be greater than minReadySeconds");
    }
    if (old?.spec) selectorImmutable(e, spec.selector, old.spec.selector, "spec.selector");
    return e.causes;
  },
};
