import { LABELS } from "../../net/types.js";
import type { RuntimePod } from "../runtime.js";

/** The `dev.choreo.container` label value of a pod's sandbox (Kubernetes calls it the POD container). */
export const SANDBOX = "POD";

/**
 * A container instance's docker name:
 * `choreo_<ns>_<pod>_<container>_<uid first 8>_<restartCount>`, readable in
 * `docker ps`; a restart is a new instance with the next count. Names are
 * engine-wide: the uid keeps two clusters (or two nodes) on one engine from
 * colliding on a pod name, as Kubernetes' `k8s_…_<uid>_<attempt>` does.
 */
export function instanceName(pod: RuntimePod, container: string, restartCount: number): string {
  return `choreo_${pod.namespace}_${pod.name}_${container}_${pod.uid.slice(0, 8)}_${restartCount}`;
}

/** The sandbox's docker name: `choreo_<ns>_<pod>_POD_<uid first 8>`. */
export function sandboxName(pod: RuntimePod): string {
  return `choreo_${pod.namespace}_${pod.name}_${SANDBOX}_${pod.uid.slice(0, 8)}`;
}

/** The labels of every container of a pod (`container` is the spec name or {@link SANDBOX}). */
export function podLabels(o: { node: string; pod: RuntimePod; container: string; restartCount: number; podIp: string }): Record<string, string> {
  return {
    [LABELS.managed]: "true",
    [LABELS.node]: o.node,
    [LABELS.podUid]: o.pod.uid,
    [LABELS.podNamespace]: o.pod.namespace,
    [LABELS.podName]: o.pod.name,
    [LABELS.container]: o.container,
    [LABELS.restartCount]: String(o.restartCount),
    [LABELS.podIp]: o.podIp,
  };
}

/** The docker `filters` selecting every container of a node (optionally of one pod). */
export function nodeFilter(node: string, uid?: string): { label: string[] } {
  return { label: [`${LABELS.node}=${node}`, ...(uid ? [`${LABELS.podUid}=${uid}`] : [])] };
}

/** The pod a container belongs to, from its labels; undefined for containers that are not choreo's. */
export function podOfLabels(labels: Record<string, string> | undefined): (RuntimePod & { container: string; restartCount: number; podIp: string }) | undefined {
  const uid = labels?.[LABELS.podUid];
  if (!labels || !uid) return undefined;
  return {
    uid,
    namespace: labels[LABELS.podNamespace] ?? "",
    name: labels[LABELS.podName] ?? "",
    container: labels[LABELS.container] ?? "",
    restartCount: Number(labels[LABELS.restartCount] ?? 0) || 0,
    podIp: labels[LABELS.podIp] ?? "",
  };
}
