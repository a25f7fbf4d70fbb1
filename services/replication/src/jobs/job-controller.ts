// The Job controller: one key per Job. Keeps min(parallelism, completions −
// succeeded) pods active until enough succeed (Complete) or too many fail or
// the deadline passes (Failed); then deletes what still runs.
import { isConflict, isNotFound, keyOf } from "@choreo/kit";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { ApiClient } from "@choreo/kit/client";
import { Controller, done, requeueAfter, type Result } from "@choreo/kit/controller";
import { objectRef, type EventRecorder } from "@choreo/kit/events";
import type { Job, JobCondition } from "@choreo/kit/gen/choreo/batch/v1/batch";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Registry } from "prom-client";
import { BY_OWNER, ownerUidsOf, type Cache } from "@choreo/kit/informer";
import { Expectations } from "../expectations.js";
import { PodControl, ownedPodHandlers } from "../pod-control.js";
import { isControlledBy, podFromTemplate } from "../pod-template.js";
import { remainingBackoff } from "./backoff.js";
import { pendingIndexes, withCompletionIndex } from "./indexed.js";
import { assessJob, isFinished, jobStatus, type JobAssessment } from "./job-status.js";

/** Options of {@link JobController}. */
export interface JobControllerOptions {
  client: Pick<ApiClient, "create" | "delete" | "updateStatus">;
  /** The clock (epoch ms); tests pass a fake one. */
  now?: () => number;
  jobs: Cache<Job>;
  pods: Cache<Pod>;
  recorder?: Pick<EventRecorder, "emit"> | undefined;
  log: Logger;
  workers?: number;
  registry?: Registry;
}

const JOB = { kind: "Job", apiVersion: "batch/v1" } as const;

export class JobController implements Runnable {
  readonly name = "job-controller";
  readonly controller: Controller;
  readonly expectations = new Expectations();
  private readonly podControl: PodControl;
  private readonly log: Logger;

  constructor(private readonly opts: JobControllerOptions) {
    this.log = opts.log.child({ controller: "job" });
    this.podControl = new PodControl({ client: opts.client, expectations: this.expectations, recorder: opts.recorder });
    this.controller = new Controller({
      name: "job",
      reconcile: (key) => this.reconcile(key),
      workers: opts.workers ?? 4,
      log: opts.log,
      registry: opts.registry,
    });
    opts.pods.addIndexer(BY_OWNER, ownerUidsOf);
    const enqueue = (j: Job): void => {
      if (j.metadata) this.controller.enqueue(keyOf(j.metadata));
    };
    opts.jobs.addEventHandler({ onAdd: enqueue, onUpdate: (_o, n) => enqueue(n), onDelete: (j) => j.metadata && this.expectations.forget(keyOf(j.metadata)) });
    opts.pods.addEventHandler(ownedPodHandlers(JOB.kind, this.expectations, (k) => this.controller.enqueue(k)));
  }

  async start(signal: AbortSignal): Promise<void> {
    await Promise.all([this.opts.jobs.waitForSync(signal), this.opts.pods.waitForSync(signal)]);
    await this.controller.start(signal);
  }

  async reconcile(key: string): Promise<Result> {
    const job = this.opts.jobs.get(key);
    const m = job?.metadata;
    if (!job || !m) {
      this.expectations.forget(key);
      return done();
    }
    const pods = this.opts.pods.byIndex(BY_OWNER, m.uid).filter((p) => isControlledBy(p.metadata, m.uid));
    const nowMs = (this.opts.now ?? Date.now)();
    const a = assessJob(job, pods, nowMs);
    const ref = objectRef(JOB.kind, JOB.apiVersion, job);

    let backoffMs = 0;
    if (a.finish || isFinished(job)) {
      await this.deletePods(key, job, a.active);
    } else if (!m.deletionTimestamp && this.expectations.satisfied(key)) {
      const diff = a.active.length - a.wantActive;
      // After pod failures, new pods wait (10 s doubling, at most 6 min).
      if (diff < 0) backoffMs = remainingBackoff(pods, nowMs);
      if (diff < 0 && backoffMs === 0) await this.createPods(key, job, -diff, a);
      else if (diff > 0) await this.deletePods(key, job, a.active.slice(0, diff));
    }

    const status = jobStatus(job, a, nowRfc3339());
    if (JSON.stringify(status) !== JSON.stringify(job.status)) {
      if (a.finish && !isFinished(job)) {
        this.opts.recorder?.emit(ref, a.finish.type === "Complete" ? "Normal" : "Warning", a.finish.reason, a.finish.message);
        this.log.info({ job: key, condition: a.finish.type, reason: a.finish.reason, succeeded: a.succeeded, failed: a.failed }, "job finished");
      }
      try {
        await this.opts.client.updateStatus({ kind: { $case: "job", value: { ...job, status } } });
      } catch (err) {
        if (!isConflict(err) && !isNotFound(err)) throw err;
      }
    }
    if (a.finish || isFinished(job)) return this.expireAfterTtl(key, job, status.conditions, nowMs);
    // Look again when the deadline passes, or the back-off ends.
    const waits: number[] = backoffMs > 0 ? [backoffMs + 50] : [];
    const deadline = job.spec?.activeDeadlineSeconds;
    if (deadline !== undefined) {
      const start = Date.parse(status.startTime);
      waits.push(Math.max(100, start + deadline * 1000 - nowMs + 50));
    }
    return waits.length > 0 ? requeueAfter(Math.min(...waits)) : done();
  }

  /**
   * ttlSecondsAfterFinished (Kubernetes' TTL-after-finished controller): a
   * finished Job is deleted, with Background propagation, that long after its
   * Complete or Failed condition; until then the key waits on a timer.
   */
  private async expireAfterTtl(key: string, job: Job, conditions: readonly JobCondition[], nowMs: number): Promise<Result> {
    const ttl = job.spec?.ttlSecondsAfterFinished;
    const m = job.metadata;
    if (ttl === undefined || !m || m.deletionTimestamp) return done();
    const finished = conditions.find((c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True");
    const at = Date.parse(finished?.lastTransitionTime ?? "");
    if (Number.isNaN(at)) return done();
    const expires = at + ttl * 1000;
    if (nowMs < expires) return requeueAfter(expires - nowMs + 50);
    try {
      await this.opts.client.delete("jobs", m.namespace, m.name, { propagationPolicy: "Background", preconditions: { uid: m.uid, resourceVersion: "" } });
      this.log.info({ job: key, ttlSecondsAfterFinished: ttl }, "finished job deleted after its ttl");
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
    return done();
  }

  private async createPods(key: string, job: Job, n: number, a: JobAssessment): Promise<void> {
    const owner = { ...JOB, metadata: job.metadata };
    if (a.completed) {
      // Indexed: one pod per index still to run, lowest first.
      const indexes = pendingIndexes(job.spec?.completions ?? 1, a.completed, a.active).slice(0, n);
      const name = job.metadata?.name ?? "";
      const { error } = await this.podControl.create(key, owner, indexes.length, (i) =>
        withCompletionIndex(podFromTemplate(job.spec?.template, owner), name, indexes[i] ?? 0),
      );
      if (error !== undefined) throw error;
      return;
    }
    const { error } = await this.podControl.create(key, owner, n, () => podFromTemplate(job.spec?.template, owner));
    if (error !== undefined) throw error;
  }

  private async deletePods(key: string, job: Job, pods: readonly Pod[]): Promise<void> {
    const error = await this.podControl.delete(key, { ...JOB, metadata: job.metadata }, pods);
    if (error !== undefined) throw error;
  }
}
