// PodDisruptionBudget (policy/v1): Kubernetes' validation
// (pkg/apis/policy/validation ValidatePodDisruptionBudget*) and strategy (a
// new budget's status is the disruption controller's to write; a spec change
// is a new generation, which makes evictions wait for the controller).
import { PodDisruptionBudgetStatus, type PodDisruptionBudget, type PodDisruptionBudgetSpec } from "@choreo/kit/gen/choreo/policy/v1/policy";
import type { IntOrString } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Strategy } from "../generic/strategy.js";
import { Errors } from "../shared/validation.js";
import { intOrPercent, PERCENT, positiveIntOrPercent } from "../workloads/deployment.js";
import { validateLabelSelector } from "../workloads/replicaset.js";

/** spec.unhealthyPodEvictionPolicy's values. */
export const UNHEALTHY_POD_EVICTION_POLICIES = ["AlwaysAllow", "IfHealthyBudget"] as const;

/** Kubernetes' ValidatePositiveIntOrPercent and IsNotMoreThan100Percent. */
function budgetValue(e: Errors, v: IntOrString | undefined, path: string): void {
  if (!v?.value) return;
  positiveIntOrPercent(e, v, path);
  if (v.value.$case === "strVal" && PERCENT.test(v.value.value) && intOrPercent(v) > 100) e.invalid(path, v.value.value, "must not be greater than 100%");
}

/** Kubernetes' ValidatePodDisruptionBudgetSpec. */
export function validatePdbSpec(e: Errors, spec: PodDisruptionBudgetSpec, path: string): void {
  if (spec.minAvailable?.value && spec.maxUnavailable?.value) e.invalid(path, spec, "minAvailable and maxUnavailable cannot be both set");
  budgetValue(e, spec.minAvailable, `${path}.minAvailable`);
  budgetValue(e, spec.maxUnavailable, `${path}.maxUnavailable`);
  if (spec.selector) validateLabelSelector(e, spec.selector, `${path}.selector`);
  const policy = spec.unhealthyPodEvictionPolicy;
  if (policy !== undefined && !(UNHEALTHY_POD_EVICTION_POLICIES as readonly string[]).includes(policy))
    e.notSupported(`${path}.unhealthyPodEvictionPolicy`, policy, UNHEALTHY_POD_EVICTION_POLICIES);
}

/** Kubernetes' ValidatePodDisruptionBudgetStatusUpdate: the counts are never negative. */
function validateStatus(e: Errors, s: PodDisruptionBudgetStatus | undefined): void {
  if (!s) return;
  e.nonNegative("status.disruptionsAllowed", s.disruptionsAllowed);
  e.nonNegative("status.currentHealthy", s.currentHealthy);
  e.nonNegative("status.desiredHealthy", s.desiredHealthy);
  e.nonNegative("status.expectedPods", s.expectedPods);
}

/** PodDisruptionBudget: how many of the pods its selector matches may be evicted at once. */
export const podDisruptionBudgetStrategy: Strategy<PodDisruptionBudget> = {
  prepareCreate(pdb) {
    // As Kubernetes' PrepareForCreate: the status is the disruption controller's to write.
    pdb.status = PodDisruptionBudgetStatus.fromPartial({});
  },
  validate(pdb) {
    const e = new Errors();
    if (!pdb.spec) e.required("spec", undefined);
    else validatePdbSpec(e, pdb.spec, "spec");
    validateStatus(e, pdb.status);
    return e.causes;
  },
};
