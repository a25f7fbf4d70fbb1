// Kubernetes' pod-to-node placement rules that more than one actor needs
// (the scheduler's filters, the DaemonSet controller's eligibility).
import type { Node, Pod, Taint, Toleration } from "../gen/choreo/core/v1/core.js";

/** Kubernetes' ToleratesTaint: key (empty with Exists: all keys), operator Equal/Exists, effect (empty: all). */
export function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  if (!t.key && t.operator !== "Exists") return false;
  return t.operator === "Exists" || t.value === taint.value;
}

/** The node's NoSchedule/NoExecute taints none of `tolerations` tolerates. */
export function untoleratedTaints(node: Node, tolerations: readonly Toleration[]): Taint[] {
  return (node.spec?.taints ?? []).filter(
    (taint) => (taint.effect === "NoSchedule" || taint.effect === "NoExecute") && !tolerations.some((t) => tolerates(t, taint)),
  );
}

/** Whether the node's labels satisfy the pod's nodeSelector. */
export function matchesNodeSelector(pod: Pick<Pod, "spec">, node: Node): boolean {
  const labels = node.metadata?.labels ?? {};
  return Object.entries(pod.spec?.nodeSelector ?? {}).every(([k, v]) => labels[k] === v);
}
