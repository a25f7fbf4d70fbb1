// The Job controller: one key per Job. Keeps min(parallelism, completions −
// succeeded) pods active until enough succeed (Complete) or too many fail or
// the deadline passes (Failed); then deletes what still runs.
import { isConflict, isNotFound, keyOf } from "@choreo/kit";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { ApiClient } from "@choreo/kit/client";
import { Controller, done, requeueAfter, type Result } from "@choreo/kit/controller";
import { objectRef, type EventRecorder } from "@choreo/kit/events";
import type { Job } from "@choreo/kit/gen/choreo/batch/v1/batch";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Registry } from "prom-client";
import { BY_OWNER, ownerUidsOf, type Cache } from "@choreo/kit/informer";
import { Expectations } from "../expectations.js";
import { PodControl, ownedPodHandlers } from "../pod-control.js";
import { isControlledBy, podFromTemplate } from "../pod-template.js";
import { assessJob, isFinished, jobStatus } from "./job-status.js";

/** Options of {@link JobController}. */
export interface JobControllerOptions {
  client: Pick<ApiClient, "create" | "delete" | "updateStatus">;
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
    const nowMs = Date.now();
    const a = assessJob(job, pods, nowMs);
    const ref = objectRef(JOB.kind, JOB.apiVersion, job);

    if (a.finish || isFinished(job)) {
      await this.deletePods(key, job, a.active);
    } else if (!m.deletionTimestamp && this.expectations.satisfied(key)) {
      const diff = a.active.length - a.wantActive;
      if (diff < 0) await this.createPods(key, job, -diff);
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
    // Look again when the deadline passes.
    const deadline = job.spec?.activeDeadlineSeconds;
    if (deadline !== undefined && !a.finish && !isFinished(job)) {
      const start = Date.parse(status.startTime);
      return requeueAfter(Math.max(100, start + deadline * 1000 - nowMs + 50));
    }
    return done();
  }

  private async createPods(key: string, job: Job, n: number): Promise<void> {
    const owner = { ...JOB, metadata: job.metadata };
    const { error } = await this.podControl.create(key, owner, n, () => podFromTemplate(job.spec?.template, owner));
    if (error !== undefined) throw error;
  }

  private async deletePods(key: string, job: Job, pods: readonly Pod[]): Promise<void> {
    const error = await this.podControl.delete(key, { ...JOB, metadata: job.metadata }, pods);
    if (error !== undefined) throw error;
  }
}
