// ReplicaSet (apps/v1): Kubernetes' defaults (SetDefaults_ReplicaSet) and
// validation (pkg/apis/apps/validation ValidateReplicaSet*), and what the
// Deployment strategy shares with it: the label selector and the pod template.
import { ReplicaSetStatus, type ReplicaSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { PodTemplateSpec } from "@choreo/kit/gen/choreo/core/v1/core";
import { selectorFromLabelSelector, SelectorParseError, validateLabelKey, validateLabelValue, type LabelSelector as Selector } from "@choreo/kit/apimachinery";
import type { LabelSelector } from "@choreo/kit";
import type { Strategy } from "../generic/strategy.js";
import { defaultPodSpec, validateTemplate } from "../pods/pod-spec.js";
import { Errors } from "../shared/validation.js";
import { canonicalJson } from "../shared/canonical.js";

/**
 * The selector of an apps/v1 workload: required, not empty, a valid label
 * selector; returns the parsed selector when it is one.
 */
export function validateAppsSelector(e: Errors, sel: LabelSelector | undefined, path: string, kind: string): Selector | undefined {
  if (!sel) {
    e.required(path, undefined);
    return undefined;
  }
  if (Object.keys(sel.matchLabels).length + sel.matchExpressions.length === 0) e.invalid(path, sel, `empty selector is invalid for ${kind}`);
  return validateLabelSelector(e, sel, path);
}

/** A label selector (Kubernetes' ValidateLabelSelector); returns the parsed selector when it is valid. */
export function validateLabelSelector(e: Errors, sel: LabelSelector, path: string): Selector | undefined {
  e.labelMap(`${path}.matchLabels`, sel.matchLabels);
  // Kubernetes' ValidateLabelSelectorRequirement, values validated strictly.
  sel.matchExpressions.forEach((r, i) => {
    const at = `${path}.matchExpressions[${i}]`;
    if (r.operator === "In" || r.operator === "NotIn") {
      if (r.values.length === 0) e.required(`${at}.values`, undefined);
    } else if (r.operator === "Exists" || r.operator === "DoesNotExist") {
      if (r.values.length > 0) e.forbidden(`${at}.values`, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
    } else e.invalid(`${at}.operator`, r.operator, "not a valid selector operator");
    for (const m of validateLabelKey(r.key)) e.invalid(`${at}.key`, r.key, m);
    r.values.forEach((v, j) => {
      for (const m of validateLabelValue(v)) e.invalid(`${at}.values[${j}]`, v, m);
    });
  });
  try {
    return selectorFromLabelSelector(sel);
  } catch (err) {
    if (!(err instanceof SelectorParseError)) throw err;
    e.invalid(path, sel, "invalid label selector");
    return undefined;
  }
}

/**
 * The pod template of a ReplicaSet or Deployment (ValidatePodTemplateSpecForReplicaSet):
 * selected by the selector, a valid pod spec (with the pod strategy's
 * refusals), restartPolicy Always, no activeDeadlineSeconds.
 */
export function validateAppsTemplate(e: Errors, t: PodTemplateSpec | undefined, path: string, selector: Selector | undefined): void {
  if (t && selector && !selector.isEverything() && !selector.matches(t.metadata?.labels ?? {}))
    e.invalid(`${path}.metadata.labels`, t.metadata?.labels ?? {}, "`selector` does not match template `labels`");
  validateTemplate(e, t, path, undefined, ["Always"]);
  if (t?.spec?.activeDeadlineSeconds !== undefined) e.forbidden(`${path}.spec.activeDeadlineSeconds`, "activeDeadlineSeconds in ReplicaSet is not Supported");
}

/** apps/v1 forbids changing a workload's selector. */
export function selectorImmutable(e: Errors, sel: LabelSelector | undefined, old: LabelSelector | undefined, path: string): void {
  if (canonicalJson(sel ?? null) !== canonicalJson(old ?? null)) e.invalid(path, sel ?? null, "field is immutable");
}

function defaults(rs: ReplicaSet): void {
  if (!rs.spec) return;
  rs.spec.replicas ??= 1;
  if (rs.spec.template?.spec) defaultPodSpec(rs.spec.template.spec);
}

/** ReplicaSet: keeps `replicas` pods matching its selector; owned by a Deployment or alone. */
export const replicaSetStrategy: Strategy<ReplicaSet> = {
  prepareCreate(rs) {
    // As Kubernetes' PrepareForCreate: a new object's status is the controller's to write (status.replicas reads 0).
    rs.status = ReplicaSetStatus.fromPartial({});
    defaults(rs);
  },
  prepareUpdate: defaults,
  validate(rs, old) {
    const e = new Errors();
    const spec = rs.spec;
    if (!spec) {
      e.required("spec", undefined);
      return e.causes;
    }
    e.nonNegative("spec.replicas", spec.replicas);
    e.nonNegative("spec.minReadySeconds", spec.minReadySeconds);
    const selector = validateAppsSelector(e, spec.selector, "spec.selector", "deployment");
    validateAppsTemplate(e, spec.template, "spec.template", selector);
    if (old?.spec) selectorImmutable(e, spec.selector, old.spec.selector, "spec.selector");
    return e.causes;
  },
};
