// What a Service's Endpoints should hold, as a pure function of the service
// and its selected pods (the Kubernetes endpoints controller's rules), and a
// canonical form to tell whether what is stored already says the same.
import type { EndpointAddress, EndpointPort, EndpointSubset, Pod, Service, ServicePort } from "@choreo/kit/gen/choreo/core/v1/core";

/** Whether a pod counts as an endpoint at all: it has an IP, is not terminating and has not finished. */
export function isEndpointCandidate(pod: Pod): boolean {
  if (!pod.status?.podIp) return false;
  if (pod.metadata?.deletionTimestamp) return false;
  const phase = pod.status.phase;
  return phase !== "Succeeded" && phase !== "Failed";
}

/** Whether the pod's Ready condition is True. */
export function isPodReady(pod: Pod): boolean {
  return pod.status?.conditions.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

/**
 * The pod port a service port reaches: `targetPort` as a number, or a name
 * looked up among the pod's container ports (same protocol); unset means the
 * service port. Undefined when the name is not there.
 */
export function resolvePort(pod: Pod, sp: ServicePort): number | undefined {
  const tp = sp.targetPort?.value;
  if (tp === undefined || (tp.$case === "intVal" && tp.value === 0) || (tp.$case === "strVal" && tp.value === "")) return sp.port;
  if (tp.$case === "intVal") return tp.value;
  const protocol = sp.protocol || "TCP";
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports) {
      if (p.name === tp.value && (p.protocol || "TCP") === protocol) return p.containerPort;
    }
  }
  return undefined;
}

function addressOf(pod: Pod): EndpointAddress {
  const m = pod.metadata;
  return {
    ip: pod.status?.podIp ?? "",
    hostname: "",
    nodeName: pod.spec?.nodeName || undefined,
    targetRef: { kind: "Pod", namespace: m?.namespace ?? "", name: m?.name ?? "", uid: m?.uid ?? "", apiVersion: "", resourceVersion: "", fieldPath: "" },
  };
}

const portKey = (p: EndpointPort): string => `${p.name}\u0000${p.port}\u0000${p.protocol}`;
const byPort = (a: EndpointPort, b: EndpointPort): number => cmp(a.name, b.name) || a.port - b.port || cmp(a.protocol, b.protocol);
const byAddress = (a: EndpointAddress, b: EndpointAddress): number =>
  cmp(a.ip, b.ip) || cmp(a.targetRef?.namespace ?? "", b.targetRef?.namespace ?? "") || cmp(a.targetRef?.name ?? "", b.targetRef?.name ?? "");
function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The subsets of a Service's Endpoints: every candidate pod, ready ones in
 * `addresses` and the rest in `notReadyAddresses`, grouped by the set of
 * ports it serves (a pod missing a named port serves fewer, or none: then it
 * is left out). A service without ports gets one subset without ports.
 * Sorted: equal inputs give equal outputs.
 */
export function desiredSubsets(service: Service, pods: readonly Pod[]): EndpointSubset[] {
  const servicePorts = service.spec?.ports ?? [];
  const groups = new Map<string, EndpointSubset>();
  for (const pod of pods) {
    if (!isEndpointCandidate(pod)) continue;
    const ports: EndpointPort[] = [];
    for (const sp of servicePorts) {
      const port = resolvePort(pod, sp);
      if (port !== undefined) ports.push({ name: sp.name, port, protocol: sp.protocol || "TCP" });
    }
    if (servicePorts.length > 0 && ports.length === 0) continue;
    ports.sort(byPort);
    const key = ports.map(portKey).join("\u0001");
    let subset = groups.get(key);
    if (!subset) groups.set(key, (subset = { addresses: [], notReadyAddresses: [], ports }));
    (isPodReady(pod) ? subset.addresses : subset.notReadyAddresses).push(addressOf(pod));
  }
  return [...groups.entries()]
    .sort(([a], [b]) => cmp(a, b))
    .map(([, s]) => ({ ...s, addresses: s.addresses.sort(byAddress), notReadyAddresses: s.notReadyAddresses.sort(byAddress) }));
}

/**
 * A string equal for two subset lists exactly when they say the same:
 * order of subsets, addresses and ports does not count, nor fields the
 * endpoints actor does not set (targetRef's resourceVersion).
 */
export function canonicalSubsets(subsets: readonly EndpointSubset[]): string {
  const addr = (a: EndpointAddress): string[] => [
    a.ip,
    a.hostname,
    a.nodeName ?? "",
    a.targetRef?.kind ?? "",
    a.targetRef?.namespace ?? "",
    a.targetRef?.name ?? "",
    a.targetRef?.uid ?? "",
  ];
  const flat = subsets
    .map((s) =>
      JSON.stringify([
        [...s.ports].sort(byPort).map((p) => [p.name, p.port, p.protocol || "TCP"]),
        [...s.addresses].sort(byAddress).map(addr),
        [...s.notReadyAddresses].sort(byAddress).map(addr),
      ]),
    )
    .filter((s) => s !== "[[],[],[]]")
    .sort();
  return JSON.stringify(flat);
}
