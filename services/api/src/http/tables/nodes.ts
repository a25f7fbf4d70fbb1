// Node columns, after kubectl's printNode.
import { since } from "./age.js";
import { bool, orNone, rec, recs, str, type Json } from "./json.js";
import { AGE_COLUMN, NAME_COLUMN, col, wide, type KindTable } from "./types.js";

const ROLE_PREFIX = "node-role.kubernetes.io/";

/** `Ready`, `NotReady` or `Unknown`, plus `,SchedulingDisabled` when cordoned. */
export function nodeStatus(node: Json): string {
  const ready = recs(rec(node["status"])["conditions"]).find((c) => str(c["type"]) === "Ready");
  const parts = [ready === undefined ? "Unknown" : str(ready["status"]) === "True" ? "Ready" : "NotReady"];
  if (bool(rec(node["spec"])["unschedulable"])) parts.push("SchedulingDisabled");
  return parts.join(",");
}

/** The roles from `node-role.kubernetes.io/<role>` and `kubernetes.io/role` labels; `<none>` without any. */
export function nodeRoles(node: Json): string {
  const labels = rec(rec(node["metadata"])["labels"]);
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(labels)) {
    if (k.startsWith(ROLE_PREFIX) && k.length > ROLE_PREFIX.length) roles.add(k.slice(ROLE_PREFIX.length));
    else if (k === "kubernetes.io/role" && str(v)) roles.add(str(v));
  }
  return roles.size === 0 ? "<none>" : [...roles].sort().join(",");
}

function address(node: Json, type: string): string {
  const a = recs(rec(node["status"])["addresses"]).find((x) => str(x["type"]) === type);
  return orNone(a ? str(a["address"]) : "");
}

function orUnknown(s: string): string {
  return s === "" ? "<unknown>" : s;
}

export const nodeTable: KindTable = {
  columns: [
    NAME_COLUMN,
    col("Status", "The status of the node"),
    col("Roles", "The roles of the node"),
    AGE_COLUMN,
    col("Version", "Kubelet Version reported by the node."),
    wide("Internal-IP", "List of addresses reachable to the node. Queried from cloud provider, if available."),
    wide("External-IP", "List of addresses reachable to the node. Queried from cloud provider, if available."),
    wide("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."),
    wide("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."),
    wide("Container-Runtime", "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."),
  ],
  cells(node, now) {
    const meta = rec(node["metadata"]);
    const info = rec(rec(node["status"])["nodeInfo"]);
    return [
      str(meta["name"]),
      nodeStatus(node),
      nodeRoles(node),
      since(meta["creationTimestamp"], now),
      str(info["kubeletVersion"]),
      address(node, "InternalIP"),
      address(node, "ExternalIP"),
      orUnknown(str(info["osImage"])),
      orUnknown(str(info["kernelVersion"])),
      orUnknown(str(info["containerRuntimeVersion"])),
    ];
  },
};
