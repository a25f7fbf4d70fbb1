// CronJob (batch/v1): Jobs made from a template on a cron schedule. Defaults
// and validation as Kubernetes' (SetDefaults_CronJob, ValidateCronJob); the
// schedule and time zone are read by kit's cron parser, the one the
// controller uses.
import { CronParseError, parseCronSchedule, timeZoneError } from "@choreo/kit/apimachinery";
import type { CronJob } from "@choreo/kit/gen/choreo/batch/v1/batch";
import type { Strategy } from "../generic/strategy.js";
import { defaultPodSpec } from "../pods/pod-spec.js";
import { Errors } from "../shared/validation.js";
import { validateJobSpecFields } from "../workloads/strategy.js";

/** A Job is named `<cronjob>-<minutes since epoch>` (11 characters more) and Job names are DNS-1035-label long at most: 63 − 11. */
export const MAX_CRONJOB_NAME = 52;

export const CONCURRENCY_POLICIES = ["Allow", "Forbid", "Replace"] as const;

function prepare(cj: CronJob): void {
  const spec = cj.spec;
  if (!spec) return;
  spec.concurrencyPolicy ||= "Allow";
  spec.suspend ??= false;
  spec.successfulJobsHistoryLimit ??= 3;
  spec.failedJobsHistoryLimit ??= 1;
  const podSpec = spec.jobTemplate?.spec?.template?.spec;
  if (podSpec) defaultPodSpec(podSpec);
}

/** The schedule's errors (Kubernetes' validateScheduleFormat); a TZ in the schedule is allowed only on an update of a schedule that had one. */
function validateSchedule(e: Errors, cj: CronJob, old: CronJob | undefined): void {
  const schedule = cj.spec?.schedule ?? "";
  if (schedule === "") {
    e.required("spec.schedule", undefined);
    return;
  }
  try {
    parseCronSchedule(schedule, "UTC");
  } catch (err) {
    if (!(err instanceof CronParseError)) throw err;
    e.invalid("spec.schedule", schedule, err.message);
  }
  const allowTz = (old?.spec?.schedule ?? "").includes("TZ");
  if (allowTz && schedule.includes("TZ") && cj.spec?.timeZone !== undefined)
    e.invalid("spec.schedule", schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule");
  else if (!allowTz && schedule.includes("TZ")) e.invalid("spec.schedule", schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
}

export const cronJobStrategy: Strategy<CronJob> = {
  prepareCreate: prepare,
  prepareUpdate: prepare,
  validate(cj, old) {
    const e = new Errors();
    const name = cj.metadata?.name ?? "";
    if (name.length > MAX_CRONJOB_NAME) e.invalid("metadata.name", name, `must be no more than ${MAX_CRONJOB_NAME} characters`);
    const spec = cj.spec;
    if (!spec) {
      e.required("spec", undefined);
      return e.causes;
    }
    validateSchedule(e, cj, old);
    e.nonNegative("spec.startingDeadlineSeconds", spec.startingDeadlineSeconds);
    if (spec.concurrencyPolicy === "") e.required("spec.concurrencyPolicy", undefined);
    else e.oneOf("spec.concurrencyPolicy", spec.concurrencyPolicy, CONCURRENCY_POLICIES);
    const template = spec.jobTemplate?.spec;
    if (!template) e.required("spec.jobTemplate.spec", undefined);
    else validateJobSpecFields(e, template, "spec.jobTemplate.spec");
    e.labelMap("spec.jobTemplate.metadata.labels", spec.jobTemplate?.metadata?.labels ?? {});
    e.nonNegative("spec.successfulJobsHistoryLimit", spec.successfulJobsHistoryLimit);
    e.nonNegative("spec.failedJobsHistoryLimit", spec.failedJobsHistoryLimit);
    if (spec.timeZone !== undefined) {
      const why = timeZoneError(spec.timeZone);
      if (why) e.invalid("spec.timeZone", spec.timeZone, why);
    }
    return e.causes;
  },
};
