import type { DaemonSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { Job, JobSpec } from "@choreo/kit/gen/choreo/batch/v1/batch";
import type { ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import { selectorFromLabelSelector, SelectorParseError } from "@choreo/kit/apimachinery";
import { emptyMeta, fieldError, type LabelSelector } from "@choreo/kit";
import type { Strategy } from "../generic/strategy.js";
import { defaultPodSpec, validateTemplate } from "../pods/pod-spec.js";
import { Errors } from "../shared/validation.js";
import { canonicalJson } from "../shared/canonical.js";

/** ReplicationController: selector defaults to the template's labels. */
export const replicationControllerStrategy: Strategy<ReplicationController> = {
  prepareCreate(rc) {
    const spec = rc.spec;
    if (!spec) return;
    spec.replicas ??= 1;
    if (Object.keys(spec.selector).length === 0 && spec.template?.metadata) spec.selector = { ...spec.template.metadata.labels };
    if (Object.keys(rc.metadata?.labels ?? {}).length === 0 && rc.metadata && spec.template?.metadata)
      rc.metadata.labels = { ...spec.template.metadata.labels };
    if (spec.template?.spec) defaultPodSpec(spec.template.spec);
  },
  prepareUpdate(rc) {
    if (rc.spec) rc.spec.replicas ??= 1;
    if (rc.spec?.template?.spec) defaultPodSpec(rc.spec.template.spec);
  },
  validate(rc) {
    const e = new Errors();
    if (!rc.spec) {
      e.required("spec", undefined);
      return e.causes;
    }
    e.nonNegative("spec.replicas", rc.spec.replicas);
    e.nonNegative("spec.minReadySeconds", rc.spec.minReadySeconds);
    if (Object.keys(rc.spec.selector).length === 0) e.required("spec.selector", undefined);
    e.labelMap("spec.selector", rc.spec.selector);
    validateTemplate(e, rc.spec.template, "spec.template", rc.spec.selector, ["Always"]);
    return e.causes;
  },
};

function validateSelector(e: Errors, sel: LabelSelector | undefined, labels: Record<string, string>, path: string): void {
  if (!sel || (Object.keys(sel.matchLabels).length === 0 && sel.matchExpressions.length === 0)) {
    e.required(path, undefined);
    return;
  }
  try {
    if (!selectorFromLabelSelector(sel).matches(labels))
      e.invalid(`${path.replace(/selector$/, "template.metadata.labels")}`, labels, "`selector` does not match template `labels`");
  } catch (err) {
    if (err instanceof SelectorParseError) e.invalid(path, sel, err.message);
    else throw err;
  }
}

/** DaemonSet: one pod per eligible node; RollingUpdate by default. */
export const daemonSetStrategy: Strategy<DaemonSet> = {
  prepareCreate(ds) {
    const spec = ds.spec;
    if (!spec) return;
    spec.updateStrategy ??= { type: "RollingUpdate", rollingUpdate: undefined };
    spec.updateStrategy.type ||= "RollingUpdate";
    if (spec.updateStrategy.type === "RollingUpdate") {
      spec.updateStrategy.rollingUpdate ??= { maxUnavailable: { value: { $case: "intVal", value: 1 } }, maxSurge: { value: { $case: "intVal", value: 0 } } };
    }
    spec.revisionHistoryLimit ??= 10;
    if (spec.template?.spec) defaultPodSpec(spec.template.spec);
  },
  prepareUpdate(ds) {
    void daemonSetStrategy.prepareCreate?.(ds);
  },
  validate(ds, old) {
    const e = new Errors();
    if (!ds.spec) {
      e.required("spec", undefined);
      return e.causes;
    }
    validateSelector(e, ds.spec.selector, ds.spec.template?.metadata?.labels ?? {}, "spec.selector");
    validateTemplate(e, ds.spec.template, "spec.template", undefined, ["Always"]);
    e.oneOf("spec.updateStrategy.type", ds.spec.updateStrategy?.type ?? "", ["RollingUpdate", "OnDelete"]);
    if (old?.spec && canonicalJson(ds.spec.selector) !== canonicalJson(old.spec.selector)) e.invalid("spec.selector", ds.spec.selector, "field is immutable");
    return e.causes;
  },
};

/** What a Job's spec and a CronJob's job template share: counts, the pod template (restartPolicy OnFailure or Never), the completion mode. */
export function validateJobSpecFields(e: Errors, spec: JobSpec, path: string): void {
  for (const k of ["parallelism", "completions", "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"] as const)
    e.nonNegative(`${path}.${k}`, spec[k]);
  validateTemplate(e, spec.template, `${path}.template`, undefined, ["OnFailure", "Never"]);
  if (spec.completionMode !== "") e.oneOf(`${path}.completionMode`, spec.completionMode, ["NonIndexed", "Indexed"]);
  if (spec.completionMode === "Indexed" && spec.completions === undefined)
    e.causes.push(fieldError(`${path}.completions`, "FieldValueRequired", "Required value: when completion mode is Indexed"));
}

/** Job: pods that run to completion; selector generated from the uid. */
export const jobStrategy: Strategy<Job> = {
  prepareCreate(job) {
    const spec = job.spec;
    if (!spec) return;
    spec.parallelism ??= 1;
    spec.completions ??= 1;
    spec.backoffLimit ??= 6;
    spec.completionMode ||= "NonIndexed";
    spec.suspend ??= false;
    const uid = job.metadata?.uid ?? "";
    if (!spec.manualSelector && spec.template) {
      spec.template.metadata ??= emptyMeta();
      const name = job.metadata?.name ?? "";
      Object.assign(spec.template.metadata.labels, {
        "controller-uid": uid,
        "job-name": name,
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
      });
      spec.selector = { matchLabels: { "batch.kubernetes.io/controller-uid": uid }, matchExpressions: [] };
    }
    if (spec.template?.spec) defaultPodSpec(spec.template.spec);
  },
  prepareUpdate(job, old) {
    if (job.spec && old.spec) {
      job.spec.selector ??= old.spec.selector;
      job.spec.template ??= old.spec.template;
    }
  },
  validate(job, old) {
    const e = new Errors();
    const spec = job.spec;
    if (!spec) {
      e.required("spec", undefined);
      return e.causes;
    }
    validateSelector(e, spec.selector, spec.template?.metadata?.labels ?? {}, "spec.selector");
    validateJobSpecFields(e, spec, "spec");
    if (old?.spec && canonicalJson(spec.template) !== canonicalJson(old.spec.template)) e.invalid("spec.template", "", "field is immutable");
    return e.causes;
  },
};
