// Indexed completion mode (pure): each pod of a Job with
// `completionMode: Indexed` carries one completion index in 0..completions−1
// (annotation and label batch.kubernetes.io/job-completion-index, env
// JOB_COMPLETION_INDEX from that annotation, hostname <job>-<index>); the Job
// is complete when every index has a Succeeded pod; status.completedIndexes
// lists them as ranges ("0-2,4").
import { EnvVar, type Pod } from "@choreo/kit/gen/choreo/core/v1/core";

export const COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index";
export const COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX";

/** The completion index of a pod, or undefined when it has none (or a malformed one). */
export function indexOf(p: Pod): number | undefined {
  const v = p.metadata?.annotations[COMPLETION_INDEX] ?? p.metadata?.labels[COMPLETION_INDEX];
  if (v === undefined || !/^\d+$/.test(v)) return undefined;
  return Number(v);
}

/** Parses "0-2,4" (status.completedIndexes); indexes at or above `completions` are dropped. */
export function parseIndexes(s: string, completions: number): Set<number> {
  const out = new Set<number>();
  for (const part of s.split(",")) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) continue;
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    for (let i = a; i <= b && i < completions; i++) out.add(i);
  }
  return out;
}

/** Formats indexes as Kubernetes does: sorted, consecutive runs as a-b, comma-separated ("" when none). */
export function formatIndexes(indexes: Iterable<number>): string {
  const xs = [...new Set(indexes)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < xs.length;) {
    let j = i;
    while (j + 1 < xs.length && xs[j + 1] === (xs[j] ?? 0) + 1) j++;
    parts.push(i === j ? String(xs[i]) : `${xs[i]}-${xs[j]}`);
    i = j + 1;
  }
  return parts.join(",");
}

/** Indexes still to run: not completed and without an active pod, lowest first. */
export function pendingIndexes(completions: number, completed: ReadonlySet<number>, active: readonly Pod[]): number[] {
  const running = new Set(active.map(indexOf).filter((i): i is number => i !== undefined));
  const out: number[] = [];
  for (let i = 0; i < completions; i++) if (!completed.has(i) && !running.has(i)) out.push(i);
  return out;
}

/** Makes a pod from the Job's template the pod of `index` (in place). */
export function withCompletionIndex(p: Pod, jobName: string, index: number): Pod {
  const m = p.metadata;
  if (m) {
    m.annotations[COMPLETION_INDEX] = String(index);
    m.labels[COMPLETION_INDEX] = String(index);
    m.generateName = `${jobName}-${index}-`;
  }
  const spec = p.spec;
  if (spec) {
    spec.hostname = `${jobName}-${index}`;
    const env = EnvVar.fromPartial({
      name: COMPLETION_INDEX_ENV,
      valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: `metadata.annotations['${COMPLETION_INDEX}']` } },
    });
    for (const c of [...spec.initContainers, ...spec.containers]) {
      if (!c.env.some((e) => e.name === COMPLETION_INDEX_ENV)) c.env.push(structuredClone(env));
    }
  }
  return p;
}
