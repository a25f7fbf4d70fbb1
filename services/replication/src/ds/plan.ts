// What a DaemonSet should do now (pure): which nodes need a pod, which pods
// must go, which old pods the rolling update may replace, and the status.
import { createHash } from "node:crypto";
import { matchesNodeSelector, untoleratedTaints } from "@choreo/kit";
import type { DaemonSet, DaemonSetStatus } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { IntOrString, Node, Pod, PodTemplateSpec, Toleration } from "@choreo/kit/gen/choreo/core/v1/core";
import { isAvailable, isReady, templateJson } from "../pod-template.js";

export const REVISION_LABEL = "controller-revision-hash";

/** Tolerations every DaemonSet pod gets, as in Kubernetes: it stays on not-ready, unreachable and cordoned nodes. */
export const DAEMON_TOLERATIONS: Toleration[] = [
  { key: "node.kubernetes.io/not-ready", operator: "Exists", value: "", effect: "NoExecute" },
  { key: "node.kubernetes.io/unreachable", operator: "Exists", value: "", effect: "NoExecute" },
  { key: "node.kubernetes.io/unschedulable", operator: "Exists", value: "", effect: "NoSchedule" },
];

/**
 * A stable hash of the pod template: pods with another hash are out of date.
 * Taken over the template's Kubernetes JSON, so that an api round trip (a
 * `kubectl label` on the DaemonSet decodes the template with empty structs
 * where there were none) is the same template and rolls no pod.
 */
export function templateHash(t: PodTemplateSpec | undefined): string {
  return createHash("sha256").update(templateJson(t)).digest("hex").slice(0, 10);
}

/** The template with the DaemonSet tolerations added (what its pods run with). */
export function daemonTemplate(ds: DaemonSet): PodTemplateSpec | undefined {
  const t = ds.spec?.template;
  if (!t?.spec) return t;
  const have = t.spec.tolerations;
  const extra = DAEMON_TOLERATIONS.filter((d) => !have.some((h) => h.key === d.key && h.effect === d.effect));
  return { ...t, spec: { ...t.spec, tolerations: [...have, ...extra] } };
}

/** Whether the DaemonSet's pod belongs on `node`: nodeSelector matches and every NoSchedule/NoExecute taint is tolerated. */
export function eligible(ds: DaemonSet, node: Node): boolean {
  const t = daemonTemplate(ds);
  if (!t || node.metadata?.deletionTimestamp) return false;
  return matchesNodeSelector(t, node) && untoleratedTaints(node, t.spec?.tolerations ?? []).length === 0;
}

/**
 * An int or a percentage of `total` (Kubernetes' GetScaledValueFromIntOrPercent):
 * a percentage rounds up, or down when `roundUp` is false.
 */
export function scaled(v: IntOrString | undefined, total: number, dflt: number, roundUp = true): number {
  const x = v?.value;
  if (!x) return dflt;
  if (x.$case === "intVal") return x.value;
  const pct = Number(x.value.replace(/%$/, ""));
  if (!Number.isFinite(pct)) return dflt;
  return roundUp ? Math.ceil((pct * total) / 100) : Math.floor((pct * total) / 100);
}

/** The plan of {@link planDaemonSet}. */
export interface DaemonPlan {
  /** Nodes that need a pod. */
  create: string[];
  /** Pods to delete: on nodes where they don't belong, duplicates, failed pods, and old pods the rolling update replaces now. */
  remove: Pod[];
  status: DaemonSetStatus;
}

const ageOf = (p: Pod): number => Date.parse(p.metadata?.creationTimestamp ?? "") || 0;

/** The plan for `ds` given all nodes and its own (controlled, not deleting) pods. */
export function planDaemonSet(ds: DaemonSet, nodes: readonly Node[], pods: readonly Pod[], nowMs: number): DaemonPlan {
  const hash = templateHash(ds.spec?.template);
  const minReady = ds.spec?.minReadySeconds ?? 0;
  const byNode = new Map<string, Pod[]>();
  for (const p of pods) {
    const n = p.spec?.nodeName ?? "";
    byNode.set(n, [...(byNode.get(n) ?? []), p]);
  }
  const wanted = new Set(nodes.filter((n) => eligible(ds, n)).map((n) => n.metadata?.name ?? ""));
  const create: string[] = [];
  const remove: Pod[] = [];
  let misscheduled = 0;
  // The one pod per eligible node that counts (oldest running first).
  const current = new Map<string, Pod>();
  for (const [node, ps] of byNode) {
    if (!wanted.has(node)) {
      misscheduled += ps.length;
      remove.push(...ps);
      continue;
    }
    const failed = ps.filter((p) => p.status?.phase === "Failed");
    remove.push(...failed);
    const live = ps.filter((p) => p.status?.phase !== "Failed").sort((a, b) => ageOf(a) - ageOf(b));
    if (live[0]) current.set(node, live[0]);
    remove.push(...live.slice(1));
  }
  for (const node of wanted) if (!current.has(node)) create.push(node);

  const available = (p: Pod | undefined): boolean => p !== undefined && isAvailable(p, minReady, nowMs);
  const desired = wanted.size;
  const updated = [...current.values()].filter((p) => p.metadata?.labels[REVISION_LABEL] === hash);
  const numberAvailable = [...current.values()].filter(available).length;

  const strategy = ds.spec?.updateStrategy;
  if ((strategy?.type ?? "RollingUpdate") === "RollingUpdate") {
    const maxUnavailable = Math.max(1, scaled(strategy?.rollingUpdate?.maxUnavailable, desired, 1));
    const unavailable = [...wanted].filter((n) => !available(current.get(n))).length;
    let budget = maxUnavailable - unavailable;
    const old = [...current.values()]
      .filter((p) => p.metadata?.labels[REVISION_LABEL] !== hash)
      .sort((a, b) => (a.spec?.nodeName ?? "").localeCompare(b.spec?.nodeName ?? ""));
    for (const p of old) {
      if (!available(p))
        remove.push(p); // Already down: replacing it costs nothing.
      else if (budget > 0) {
        remove.push(p);
        budget--;
      }
    }
  }

  const status: DaemonSetStatus = {
    currentNumberScheduled: current.size,
    numberMisscheduled: misscheduled,
    desiredNumberScheduled: desired,
    numberReady: [...current.values()].filter(isReady).length,
    observedGeneration: ds.metadata?.generation ?? 0,
    updatedNumberScheduled: updated.length,
    numberAvailable,
    numberUnavailable: Math.max(0, desired - numberAvailable),
    collisionCount: ds.status?.collisionCount,
    conditions: ds.status?.conditions ?? [],
  };
  return { create, remove: [...new Set(remove)], status };
}
