// The agents' usage → metrics.k8s.io/v1beta1 objects, as metrics-server
// shapes them (pure).
import { emptyMeta } from "@choreo/kit";
import { quantityFromNano } from "@choreo/kit/apimachinery";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { NodeMetrics, PodMetrics } from "@choreo/kit/gen/choreo/metrics/v1beta1/metrics";
import type { PodStats, Usage } from "@choreo/kit/gen/choreo/node/v1/stats";

export const GROUP = "metrics.k8s.io";
export const VERSION = "v1beta1";
export const GROUP_VERSION = `${GROUP}/${VERSION}`;

/** A duration as Go's time.Duration prints it (metav1.Duration's JSON): `15s`, `15.002s`, `1m0.5s`, `0s`. */
export function goDuration(ms: number): string {
  if (ms <= 0) return "0s";
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  const sec = `${Number(s.toFixed(3))}s`;
  if (h > 0) return `${h}h${m}m${sec}`;
  if (m > 0) return `${m}m${sec}`;
  return sec;
}

/** RFC 3339 with second precision (metav1.Time). */
function seconds(iso: string): string {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? "" : new Date(t).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** `cpu` in nanocores as metrics-server prints it ("123456n", "250m", "1"), `memory` in bytes ("1234Ki", "1Mi", "1000"). */
export function usageList(u: Pick<Usage, "cpuNanocores" | "memoryWorkingSetBytes">): Record<string, string> {
  return {
    cpu: quantityFromNano(BigInt(u.cpuNanocores)).toString(),
    memory: quantityFromNano(BigInt(u.memoryWorkingSetBytes) * 1_000_000_000n, "BinarySI").toString(),
  };
}

/** A node's metrics: its name and labels, creationTimestamp now (metrics-server's). */
export function nodeMetricsOf(node: Node, u: Usage, now: string): NodeMetrics {
  return {
    apiVersion: GROUP_VERSION,
    kind: "NodeMetrics",
    metadata: emptyMeta({ name: node.metadata?.name ?? "", labels: { ...node.metadata?.labels }, creationTimestamp: now }),
    timestamp: seconds(u.timestamp),
    window: goDuration(u.windowMs),
    usage: usageList(u),
  };
}

/** A pod's metrics: each reported container's usage; the window and timestamp of the newest container reading. */
export function podMetricsOf(pod: Pod, s: PodStats, now: string): PodMetrics {
  const usages = s.containers.flatMap((c) => (c.usage ? [c.usage] : []));
  const newest = usages.reduce<Usage | undefined>((a, b) => (!a || Date.parse(b.timestamp) > Date.parse(a.timestamp) ? b : a), undefined);
  return {
    apiVersion: GROUP_VERSION,
    kind: "PodMetrics",
    metadata: emptyMeta({
      name: pod.metadata?.name ?? "",
      namespace: pod.metadata?.namespace ?? "",
      labels: { ...pod.metadata?.labels },
      creationTimestamp: now,
    }),
    timestamp: newest ? seconds(newest.timestamp) : now,
    window: goDuration(newest?.windowMs ?? 0),
    // In the pod's spec order, as metrics-server lists them.
    containers: [...s.containers]
      .sort((a, b) => specIndex(pod, a.name) - specIndex(pod, b.name))
      .flatMap((c) => (c.usage ? [{ name: c.name, usage: usageList(c.usage) }] : [])),
  };
}

function specIndex(pod: Pod, name: string): number {
  const i = pod.spec?.containers.findIndex((c) => c.name === name) ?? -1;
  return i < 0 ? Number.MAX_SAFE_INTEGER : i;
}
