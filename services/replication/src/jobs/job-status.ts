// What a Job's pods say about it (pure): counts, whether it finished, and
// how many pods should be running now.
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Job, JobCondition, JobStatus } from "@choreo/kit/gen/choreo/batch/v1/batch";
import { isActive, isReady } from "../pod-template.js";
import { formatIndexes, indexOf, parseIndexes } from "./indexed.js";

/** The verdict of {@link assessJob}. */
export interface JobAssessment {
  active: Pod[];
  succeeded: number;
  failed: number;
  ready: number;
  /** Set when the Job is finished now: Complete, or Failed with a reason. */
  finish?: { type: "Complete" | "Failed"; reason: string; message: string };
  /** How many pods should be active (0 once finished or suspended). */
  wantActive: number;
  /** Indexed completion mode: the indexes with a Succeeded pod (now or before). */
  completed?: Set<number>;
}

export const isFinished = (job: Job): boolean =>
  (job.status?.conditions ?? []).some((c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True");

/**
 * Counts never go down: a finished pod deleted by someone stays counted
 * (Kubernetes tracks this with a finalizer; we keep the highest count seen in
 * status). With restartPolicy OnFailure, container restarts count as failures.
 */
export function assessJob(job: Job, pods: readonly Pod[], nowMs: number): JobAssessment {
  const spec = job.spec;
  const completions = spec?.completions ?? 1;
  const parallelism = spec?.parallelism ?? 1;
  const backoffLimit = spec?.backoffLimit ?? 6;
  const onFailure = spec?.template?.spec?.restartPolicy === "OnFailure";
  const active = pods.filter(isActive);
  let succeeded = Math.max(job.status?.succeeded ?? 0, pods.filter((p) => p.status?.phase === "Succeeded").length);
  let completed: Set<number> | undefined;
  if (spec?.completionMode === "Indexed") {
    // An index counts once, however many of its pods succeeded.
    completed = parseIndexes(job.status?.completedIndexes ?? "", completions);
    for (const p of pods) {
      const i = indexOf(p);
      if (p.status?.phase === "Succeeded" && i !== undefined && i < completions) completed.add(i);
    }
    succeeded = completed.size;
  }
  const restarts = onFailure ? pods.reduce((n, p) => n + (p.status?.containerStatuses ?? []).reduce((m, c) => m + c.restartCount, 0), 0) : 0;
  const failed = Math.max(job.status?.failed ?? 0, pods.filter((p) => p.status?.phase === "Failed").length + restarts);
  const ready = active.filter(isReady).length;
  const base = { active, succeeded, failed, ready, ...(completed ? { completed } : {}) };
  if (succeeded >= completions) return { ...base, wantActive: 0, finish: { type: "Complete", reason: "Completed", message: "Job completed" } };
  if (failed > backoffLimit)
    return { ...base, wantActive: 0, finish: { type: "Failed", reason: "BackoffLimitExceeded", message: "Job has reached the specified backoff limit" } };
  const start = Date.parse(job.status?.startTime ?? "");
  if (spec?.activeDeadlineSeconds !== undefined && Number.isFinite(start) && nowMs - start >= spec.activeDeadlineSeconds * 1000) {
    return { ...base, wantActive: 0, finish: { type: "Failed", reason: "DeadlineExceeded", message: "Job was active longer than specified deadline" } };
  }
  const wantActive = spec?.suspend ? 0 : Math.max(0, Math.min(parallelism, completions - succeeded));
  return { ...base, wantActive };
}

/** The status to write. */
export function jobStatus(job: Job, a: JobAssessment, now: string): JobStatus {
  const prev = job.status;
  let conditions: JobCondition[] = prev?.conditions ?? [];
  if (a.finish && !conditions.some((c) => c.type === a.finish?.type)) {
    conditions = [
      ...conditions,
      { type: a.finish.type, status: "True", lastProbeTime: now, lastTransitionTime: now, reason: a.finish.reason, message: a.finish.message },
    ];
  }
  return {
    conditions,
    startTime: prev?.startTime || now,
    completionTime: prev?.completionTime || (a.finish?.type === "Complete" ? now : ""),
    active: a.finish ? 0 : a.active.length,
    succeeded: a.succeeded,
    failed: a.failed,
    ready: a.ready,
    completedIndexes: a.completed ? formatIndexes(a.completed) : (prev?.completedIndexes ?? ""),
  };
}
