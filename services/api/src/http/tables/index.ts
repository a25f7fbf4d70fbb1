import type { KindInfo } from "@choreo/kit";
import { ageOf } from "@choreo/kit/apimachinery";

type J = Record<string, unknown>;
type Col = { name: string; type: string; format?: string; priority?: number; cell: (o: J, now: number) => unknown };

const get = (o: unknown, path: string): unknown => path.split(".").reduce<unknown>((c, p) => (c && typeof c === "object" ? (c as J)[p] : undefined), o);
const str = (o: J, path: string, dflt = "<none>"): string => {
  const v = get(o, path);
  return v === undefined || v === "" ? dflt : String(v);
};
const arr = (o: J, path: string): J[] => (Array.isArray(get(o, path)) ? (get(o, path) as J[]) : []);
const age: Col = { name: "Age", type: "string", cell: (o, now) => ageOf(str(o, "metadata.creationTimestamp", ""), now) };
const name: Col = { name: "Name", type: "string", format: "name", cell: (o) => str(o, "metadata.name") };
const selector = (m: unknown): string => Object.entries((m as Record<string, string>) ?? {}).map(([k, v]) => `${k}=${v}`).join(",") || "<none>";

function podStatus(o: J): string {
  if (get(o, "metadata.deletionTimestamp")) return "Terminating";
  let reason = str(o, "status.reason", "") || str(o, "status.phase", "Pending");
  for (const cs of arr(o, "status.containerStatuses")) {
    const w = str(cs, "state.waiting.reason", "");
    const t = str(cs, "state.terminated.reason", "");
    if (w) reason = w;
    else if (t && reason !== "Running") reason = t;
  }
  return reason;
}

const COLUMNS: Record<string, Col[]> = {
  pods: [
    name,
    { name: "Ready", type: "string", cell: (o) => `${arr(o, "status.containerStatuses").filter((c) => c["ready"]).length}/${arr(o, "spec.containers").length}` },
    { name: "Status", type: "string", cell: podStatus },
    { name: "Restarts", type: "string", cell: (o) => String(arr(o, "status.containerStatuses").reduce((n, c) => n + Number(c["restartCount"] ?? 0), 0)) },
    age,
    { name: "IP", type: "string", priority: 1, cell: (o) => str(o, "status.podIP") },
    { name: "Node", type: "string", priority: 1, cell: (o) => str(o, "spec.nodeName") },
    { name: "Nominated Node", type: "string", priority: 1, cell: (o) => str(o, "status.nominatedNodeName") },
    { name: "Readiness Gates", type: "string", priority: 1, cell: () => "<none>" },
  ],
  nodes: [
    name,
    {
      name: "Status", type: "string", cell: (o) => {
        const ready = arr(o, "status.conditions").find((c) => c["type"] === "Ready");
        const s = ready?.["status"] === "True" ? "Ready" : ready?.["status"] === "False" ? "NotReady" : "Unknown";
        return get(o, "spec.unschedulable") ? `${s},SchedulingDisabled` : s;
      },
    },
    { name: "Roles", type: "string", cell: () => "<none>" },
    age,
    { name: "Version", type: "string", cell: (o) => str(o, "status.nodeInfo.kubeletVersion", "") },
    { name: "Internal-IP", type: "string", priority: 1, cell: (o) => String(arr(o, "status.addresses").find((a) => a["type"] === "InternalIP")?.["address"] ?? "<none>") },
    { name: "OS-Image", type: "string", priority: 1, cell: (o) => str(o, "status.nodeInfo.osImage", "<unknown>") },
    { name: "Container-Runtime", type: "string", priority: 1, cell: (o) => str(o, "status.nodeInfo.containerRuntimeVersion", "<unknown>") },
  ],
  services: [
    name,
    { name: "Type", type: "string", cell: (o) => str(o, "spec.type", "ClusterIP") },
    { name: "Cluster-IP", type: "string", cell: (o) => str(o, "spec.clusterIP") },
    { name: "External-IP", type: "string", cell: () => "<none>" },
    { name: "Port(s)", type: "string", cell: (o) => arr(o, "spec.ports").map((p) => `${p["port"]}/${p["protocol"] ?? "TCP"}`).join(",") || "<none>" },
    age,
    { name: "Selector", type: "string", priority: 1, cell: (o) => selector(get(o, "spec.selector")) },
  ],
  endpoints: [
    name,
    {
      name: "Endpoints", type: "string", cell: (o) => {
        const eps = arr(o, "subsets").flatMap((s) => {
          const ports = (s["ports"] as J[] | undefined) ?? [{}];
          return ((s["addresses"] as J[] | undefined) ?? []).flatMap((a) => ports.map((p) => (p["port"] ? `${a["ip"]}:${p["port"]}` : String(a["ip"]))));
        });
        if (eps.length === 0) return "<none>";
        return eps.length > 3 ? `${eps.slice(0, 3).join(",")} + ${eps.length - 3} more...` : eps.join(",");
      },
    },
    age,
  ],
  replicationcontrollers: [
    name,
    { name: "Desired", type: "integer", cell: (o) => Number(get(o, "spec.replicas") ?? 0) },
    { name: "Current", type: "integer", cell: (o) => Number(get(o, "status.replicas") ?? 0) },
    { name: "Ready", type: "integer", cell: (o) => Number(get(o, "status.readyReplicas") ?? 0) },
    age,
    { name: "Containers", type: "string", priority: 1, cell: (o) => arr(o, "spec.template.spec.containers").map((c) => c["name"]).join(",") },
    { name: "Images", type: "string", priority: 1, cell: (o) => arr(o, "spec.template.spec.containers").map((c) => c["image"]).join(",") },
    { name: "Selector", type: "string", priority: 1, cell: (o) => selector(get(o, "spec.selector")) },
  ],
  daemonsets: [
    name,
    { name: "Desired", type: "integer", cell: (o) => Number(get(o, "status.desiredNumberScheduled") ?? 0) },
    { name: "Current", type: "integer", cell: (o) => Number(get(o, "status.currentNumberScheduled") ?? 0) },
    { name: "Ready", type: "integer", cell: (o) => Number(get(o, "status.numberReady") ?? 0) },
    { name: "Up-to-date", type: "integer", cell: (o) => Number(get(o, "status.updatedNumberScheduled") ?? 0) },
    { name: "Available", type: "integer", cell: (o) => Number(get(o, "status.numberAvailable") ?? 0) },
    { name: "Node Selector", type: "string", cell: (o) => selector(get(o, "spec.template.spec.nodeSelector")) },
    age,
  ],
  jobs: [
    name,
    {
      name: "Status", type: "string", cell: (o) => {
        const conds = arr(o, "status.conditions").filter((c) => c["status"] === "True").map((c) => c["type"]);
        return conds.includes("Complete") ? "Complete" : conds.includes("Failed") ? "Failed" : get(o, "spec.suspend") ? "Suspended" : "Running";
      },
    },
    { name: "Completions", type: "string", cell: (o) => `${Number(get(o, "status.succeeded") ?? 0)}/${Number(get(o, "spec.completions") ?? 1)}` },
    age,
  ],
  namespaces: [name, { name: "Status", type: "string", cell: (o) => str(o, "status.phase", "Active") }, age],
  events: [
    { name: "Last Seen", type: "string", cell: (o, now) => ageOf(str(o, "lastTimestamp", "") || str(o, "metadata.creationTimestamp", ""), now) },
    { name: "Type", type: "string", cell: (o) => str(o, "type", "Normal") },
    { name: "Reason", type: "string", cell: (o) => str(o, "reason", "") },
    { name: "Object", type: "string", cell: (o) => `${str(o, "involvedObject.kind", "").toLowerCase()}/${str(o, "involvedObject.name", "")}` },
    { name: "Message", type: "string", cell: (o) => str(o, "message", "") },
  ],
  leases: [name, { name: "Holder", type: "string", cell: (o) => str(o, "spec.holderIdentity", "") }, age],
};

/** A meta.k8s.io/v1 Table of objects (Kubernetes JSON) for `kubectl get`. */
export function toTable(kind: KindInfo, objects: J[], opts: { includeObject: string; resourceVersion: string; continue?: string; now?: number }): J {
  const cols = COLUMNS[kind.resource] ?? [name, age];
  const now = opts.now ?? Date.now();
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: { resourceVersion: opts.resourceVersion, ...(opts.continue ? { continue: opts.continue } : {}) },
    columnDefinitions: cols.map((c) => ({ name: c.name, type: c.type, format: c.format ?? "", description: c.name, priority: c.priority ?? 0 })),
    rows: objects.map((o) => ({
      cells: cols.map((c) => c.cell(o, now)),
      ...(opts.includeObject === "None"
        ? {}
        : { object: opts.includeObject === "Object" ? o : { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: o["metadata"] } }),
    })),
  };
}
