// The CronJob controller: one key per CronJob. Tracks its Jobs (status.active,
// lastSuccessfulTime), creates the Job of the most recent unmet schedule time
// (concurrencyPolicy, startingDeadlineSeconds, suspend), prunes finished Jobs
// beyond the history limits, and sleeps until the next schedule time. Job
// names are deterministic per schedule time, so a restart never runs a time
// twice (the create answers AlreadyExists). After Kubernetes' cronjob
// controller v2 (pkg/controller/cronjob).
import { isAlreadyExists, isConflict, isNotFound, keyOf, unwrap } from "@choreo/kit";
import { CronParseError, localZone, nowRfc3339, parseCronSchedule, timeZoneError, type CronSchedule } from "@choreo/kit/apimachinery";
import type { ApiClient } from "@choreo/kit/client";
import { Controller, done, requeueAfter, type Result } from "@choreo/kit/controller";
import { objectRef, type EventRecorder } from "@choreo/kit/events";
import { Job, type CronJob, type CronJobStatus } from "@choreo/kit/gen/choreo/batch/v1/batch";
import type { ObjectReference } from "@choreo/kit/gen/choreo/core/v1/core";
import { BY_OWNER, ownerUidsOf, type Cache } from "@choreo/kit/informer";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import { Counter, type Registry } from "prom-client";
import { controllerOf, controllerRef, isControlledBy } from "../pod-template.js";
import { jobName, mostRecentScheduleTime, nextScheduleDelay, nextScheduleTime, rfc1123z, rfc3339In } from "./schedule.js";

/** The annotation with a Job's schedule time, in the CronJob's zone. */
export const SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp";
const CRONJOB = { kind: "CronJob", apiVersion: "batch/v1" } as const;

/** Options of {@link CronJobController}. */
export interface CronJobControllerOptions {
  client: Pick<ApiClient, "create" | "delete" | "get" | "patch" | "updateStatus">;
  cronjobs: Cache<CronJob>;
  jobs: Cache<Job>;
  recorder?: Pick<EventRecorder, "emit"> | undefined;
  log: Logger;
  /** The clock (epoch ms); tests pass a fake one. */
  now?: () => number;
  workers?: number;
  registry?: Registry;
}

type Finished = "Complete" | "Failed" | undefined;

function finishedAs(job: Job): Finished {
  const c = (job.status?.conditions ?? []).find((c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True");
  return c?.type as Finished;
}

function refOf(job: Job): ObjectReference {
  const m = job.metadata;
  return {
    kind: "Job",
    apiVersion: "batch/v1",
    namespace: m?.namespace ?? "",
    name: m?.name ?? "",
    uid: m?.uid ?? "",
    resourceVersion: m?.resourceVersion ?? "",
    fieldPath: "",
  };
}

/** Finished Jobs, oldest first: by start time (unstarted last), then name (Kubernetes' byJobStartTime). */
function byStartTime(a: Job, b: Job): number {
  const sa = a.status?.startTime ?? "";
  const sb = b.status?.startTime ?? "";
  if (sa !== sb) {
    if (sa === "") return 1;
    if (sb === "") return -1;
    return Date.parse(sa) - Date.parse(sb);
  }
  return (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? "");
}

export class CronJobController implements Runnable {
  readonly name = "cronjob-controller";
  readonly controller: Controller;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly created?: Counter;

  constructor(private readonly opts: CronJobControllerOptions) {
    this.log = opts.log.child({ controller: "cronjob" });
    this.now = opts.now ?? Date.now;
    this.controller = new Controller({
      name: "cronjob",
      reconcile: (key) => this.reconcile(key),
      workers: opts.workers ?? 2,
      log: opts.log,
      registry: opts.registry,
    });
    if (opts.registry)
      this.created = new Counter({
        name: "choreo_cronjob_jobs_created_total",
        help: "Jobs the CronJob controller created, one per schedule time run.",
        registers: [opts.registry],
      });
    opts.jobs.addIndexer(BY_OWNER, ownerUidsOf);
    const enqueue = (cj: CronJob): void => {
      const m = cj.metadata;
      if (!m) return;
      this.controller.enqueue(keyOf(m));
    };
    opts.cronjobs.addEventHandler({
      onAdd: enqueue,
      onUpdate: (_o, n) => enqueue(n),
    });
    const enqueueOwner = (j: Job): void => {
      const ref = controllerOf(j.metadata);
      if (ref?.kind === CRONJOB.kind && j.metadata) this.controller.enqueue(keyOf({ namespace: j.metadata.namespace, name: ref.name }));
    };
    opts.jobs.addEventHandler({ onAdd: enqueueOwner, onUpdate: (_o, n) => enqueueOwner(n), onDelete: enqueueOwner });
  }

  async start(signal: AbortSignal): Promise<void> {
    await Promise.all([this.opts.cronjobs.waitForSync(signal), this.opts.jobs.waitForSync(signal)]);
    await this.controller.start(signal);
  }

  async reconcile(key: string): Promise<Result> {
    const cj = this.opts.cronjobs.get(key);
    if (!cj?.metadata) return done();
    const uid = cj.metadata.uid;
    const jobs = this.opts.jobs.byIndex(BY_OWNER, uid).filter((j) => isControlledBy(j.metadata, uid));
    const status: CronJobStatus = structuredClone(cj.status ?? { active: [], lastScheduleTime: "", lastSuccessfulTime: "" });
    const before = JSON.stringify(status);
    let result: Result = done();
    try {
      result = await this.sync(cj, jobs, status);
      if (!cj.metadata.deletionTimestamp) await this.pruneHistory(cj, jobs, status);
    } finally {
      if (JSON.stringify(status) !== before) await this.writeStatus(cj, status);
    }
    return result;
  }

  private emit(cj: CronJob, type: "Normal" | "Warning", reason: string, message: string): void {
    this.opts.recorder?.emit(objectRef(CRONJOB.kind, CRONJOB.apiVersion, cj), type, reason, message);
  }

  /** syncCronJob: `status` is changed in place; the result says when to look again. */
  private async sync(cj: CronJob, jobs: readonly Job[], status: CronJobStatus): Promise<Result> {
    const m = cj.metadata;
    const spec = cj.spec;
    if (!m || !spec) return done();
    const cjKey = keyOf(m);
    const children = new Set<string>();
    for (const j of jobs) {
      const jm = j.metadata;
      if (!jm) continue;
      children.add(jm.uid);
      const active = status.active.some((r) => r.uid === jm.uid);
      const finished = finishedAs(j);
      if (!active && !finished) {
        this.emit(cj, "Warning", "UnexpectedJob", `Saw a job that the controller did not create or forgot: ${jm.name}`);
      } else if (active && finished) {
        status.active = status.active.filter((r) => r.uid !== jm.uid);
        this.emit(cj, "Normal", "SawCompletedJob", `Saw completed job: ${jm.name}, condition: ${finished}`);
      }
      const completed = j.status?.completionTime ?? "";
      if (finished === "Complete" && completed && (!status.lastSuccessfulTime || Date.parse(completed) > Date.parse(status.lastSuccessfulTime)))
        status.lastSuccessfulTime = completed;
    }
    // Active Jobs the cache does not know: gone, or only not seen yet (asked live).
    for (const r of [...status.active]) {
      if (children.has(r.uid)) continue;
      try {
        await this.opts.client.get("jobs", r.namespace, r.name);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        this.emit(cj, "Normal", "MissingJob", `Active job went missing: ${r.name}`);
        status.active = status.active.filter((a) => a.uid !== r.uid);
      }
    }
    if (m.deletionTimestamp) return done();
    if (spec.suspend) return done();

    const zone = spec.timeZone ?? localZone();
    if (spec.timeZone !== undefined && timeZoneError(spec.timeZone)) {
      this.emit(cj, "Warning", "UnknownTimeZone", `invalid timeZone: "${spec.timeZone}": unknown time zone ${spec.timeZone}`);
      return done();
    }
    let schedule: CronSchedule;
    try {
      schedule = parseCronSchedule(spec.schedule, zone);
    } catch (err) {
      if (!(err instanceof CronParseError)) throw err;
      this.emit(cj, "Warning", "UnparseableSchedule", `unparseable schedule: "${spec.schedule}" : ${err.message}`);
      return done();
    }
    const now = this.now();
    const later = (): Result => {
      const ms = nextScheduleDelay({ ...cj, status }, now, schedule);
      return ms === undefined ? done() : requeueAfter(Math.max(ms, 1));
    };
    let next: ReturnType<typeof nextScheduleTime>;
    try {
      next = nextScheduleTime({ ...cj, status }, now, schedule);
    } catch (err) {
      this.emit(cj, "Warning", "InvalidSchedule", `invalid schedule: ${spec.schedule} : ${(err as Error).message}`);
      return done();
    }
    if (next.missed === "many") {
      this.emit(cj, "Warning", "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew");
      this.log.info({ cronjob: cjKey }, "too many missed times");
    }
    const scheduled = next.time;
    if (scheduled === undefined) {
      this.reportMissed(cj, status, now, schedule);
      return later();
    }

    const deadline = spec.startingDeadlineSeconds;
    if (deadline !== undefined && scheduled + deadline * 1000 < now) {
      this.emit(cj, "Warning", "MissSchedule", `Missed scheduled time to start a job: ${rfc1123z(scheduled)}`);
      return later();
    }
    const name = jobName(m.name, scheduled);
    if (status.active.some((r) => r.name === name) || (status.lastScheduleTime && Date.parse(status.lastScheduleTime) === scheduled)) return later();
    if (spec.concurrencyPolicy === "Forbid" && status.active.length > 0) {
      this.emit(cj, "Normal", "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid");
      this.log.info({ cronjob: cjKey, scheduled: new Date(scheduled).toISOString() }, "run skipped: a job is still active (Forbid)");
      return later();
    }
    if (spec.concurrencyPolicy === "Replace") {
      for (const r of [...status.active]) {
        await this.deleteJob(cj, r.namespace, r.name, r.uid, status);
      }
    }

    const job = this.jobFor(cj, scheduled, name, zone);
    let created: Job;
    try {
      created = unwrap(await this.opts.client.create({ kind: { $case: "job", value: job } })) as Job;
      this.emit(cj, "Normal", "SuccessfulCreate", `Created job ${name}`);
      this.created?.inc();
      this.log.info({ cronjob: cjKey, job: name, scheduled: new Date(scheduled).toISOString() }, "job created");
    } catch (err) {
      if (!isAlreadyExists(err)) {
        this.emit(cj, "Warning", "FailedCreate", `Error creating job: ${(err as Error).message}`);
        throw err;
      }
      // Made before (a restart between the create and the status write): take it as ours if it is.
      created = unwrap(await this.opts.client.get("jobs", m.namespace, name)) as Job;
      if (!isControlledBy(created.metadata, m.uid)) return done();
      if (status.active.some((r) => r.uid === created.metadata?.uid)) return done();
      this.log.info({ cronjob: cjKey, job: name }, "job already exists");
    }
    status.active = [...status.active, refOf(created)];
    status.lastScheduleTime = nowRfc3339(scheduled);
    return later();
  }

  /**
   * A schedule time left out because it is older than startingDeadlineSeconds
   * (and not run): a MissSchedule warning. Kubernetes' search starts at
   * now − deadline and so never reaches its own too-late branch; this tells
   * the user what was skipped.
   */
  private reportMissed(cj: CronJob, status: CronJobStatus, now: number, schedule: CronSchedule): void {
    const deadline = cj.spec?.startingDeadlineSeconds;
    if (deadline === undefined) return;
    let missed: number | undefined;
    try {
      missed = mostRecentScheduleTime({ ...cj, status }, now, schedule, false).mostRecent;
    } catch {
      return;
    }
    if (missed === undefined || missed + deadline * 1000 >= now) return;
    if (status.lastScheduleTime && Date.parse(status.lastScheduleTime) >= missed) return;
    this.emit(cj, "Warning", "MissSchedule", `Missed scheduled time to start a job: ${rfc1123z(missed)}`);
    this.log.info(
      { cronjob: keyOf(cj.metadata ?? { namespace: "", name: "" }), scheduled: new Date(missed).toISOString(), startingDeadlineSeconds: deadline },
      "run skipped: too late",
    );
  }

  private jobFor(cj: CronJob, scheduled: number, name: string, zone: string): Job {
    const t = cj.spec?.jobTemplate;
    return Job.fromPartial({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: {
        name,
        namespace: cj.metadata?.namespace ?? "",
        labels: { ...t?.metadata?.labels },
        annotations: { ...t?.metadata?.annotations, [SCHEDULED_TIMESTAMP_ANNOTATION]: rfc3339In(scheduled, zone) },
        ownerReferences: [controllerRef({ ...CRONJOB, metadata: cj.metadata })],
      },
      spec: structuredClone(t?.spec),
    });
  }

  /** Deletes a Job (Background: the collector removes its pods) and drops it from `status.active`. */
  private async deleteJob(cj: CronJob, namespace: string, name: string, uid: string, status: CronJobStatus): Promise<void> {
    try {
      await this.opts.client.delete("jobs", namespace, name, { propagationPolicy: "Background", preconditions: { uid, resourceVersion: "" } });
    } catch (err) {
      if (!isNotFound(err)) {
        this.emit(cj, "Warning", "FailedDelete", `Deleted job: ${(err as Error).message}`);
        throw err;
      }
    }
    status.active = status.active.filter((r) => r.uid !== uid);
    this.emit(cj, "Normal", "SuccessfulDelete", `Deleted job ${name}`);
  }

  /** Finished Jobs beyond successfulJobsHistoryLimit / failedJobsHistoryLimit, oldest first, are deleted. */
  private async pruneHistory(cj: CronJob, jobs: readonly Job[], status: CronJobStatus): Promise<void> {
    const spec = cj.spec;
    if (!spec) return;
    const limits: Array<[Finished, number | undefined]> = [
      ["Complete", spec.successfulJobsHistoryLimit],
      ["Failed", spec.failedJobsHistoryLimit],
    ];
    for (const [kind, limit] of limits) {
      if (limit === undefined) continue;
      const finished = jobs.filter((j) => finishedAs(j) === kind && !j.metadata?.deletionTimestamp).sort(byStartTime);
      for (const j of finished.slice(0, Math.max(0, finished.length - limit))) {
        const jm = j.metadata;
        if (jm) await this.deleteJob(cj, jm.namespace, jm.name, jm.uid, status);
      }
    }
  }

  private async writeStatus(cj: CronJob, status: CronJobStatus): Promise<void> {
    try {
      await this.opts.client.updateStatus({ kind: { $case: "cronJob", value: { ...cj, status } } });
    } catch (err) {
      // A newer CronJob is on its way through the informer, and with it another sync.
      if (!isConflict(err) && !isNotFound(err)) throw err;
    }
  }
}
