// Service and Endpoints columns, after kubectl's printService and printEndpoints.
import { since } from "./age.js";
import { formatLabels, int, rec, recs, str, strs, type Json } from "./json.js";
import { AGE_COLUMN, NAME_COLUMN, col, wide, type KindTable } from "./types.js";

/** EXTERNAL-IP: external IPs, load-balancer ingress, `<pending>`, the external name, or `<none>`. */
export function serviceExternalIp(svc: Json): string {
  const spec = rec(svc["spec"]);
  const external = strs(spec["externalIPs"]);
  switch (str(spec["type"]) || "ClusterIP") {
    case "ClusterIP":
    case "NodePort":
      return external.length > 0 ? external.join(",") : "<none>";
    case "LoadBalancer": {
      const ingress = recs(rec(rec(svc["status"])["loadBalancer"])["ingress"])
        .map((i) => str(i["ip"]) || str(i["hostname"]))
        .filter((s) => s !== "");
      const all = [...ingress, ...external];
      return all.length > 0 ? all.join(",") : "<pending>";
    }
    case "ExternalName":
      return str(spec["externalName"]);
    default:
      return "<unknown>";
  }
}

/** PORT(S): `80/TCP,443:30443/TCP`, or `<none>`. */
export function servicePorts(svc: Json): string {
  const ports = recs(rec(svc["spec"])["ports"]).map((p) => {
    const protocol = str(p["protocol"]) || "TCP";
    const nodePort = int(p["nodePort"]);
    return nodePort > 0 ? `${int(p["port"])}:${nodePort}/${protocol}` : `${int(p["port"])}/${protocol}`;
  });
  return ports.length > 0 ? ports.join(",") : "<none>";
}

export const serviceTable: KindTable = {
  columns: [
    NAME_COLUMN,
    col("Type", "type determines how the Service is exposed. Defaults to ClusterIP."),
    col("Cluster-IP", "clusterIP is the IP address of the service and is usually assigned randomly."),
    col("External-IP", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service."),
    col("Port(s)", "The list of ports that are exposed by this service."),
    AGE_COLUMN,
    wide("Selector", "Route service traffic to pods with label keys and values matching this selector."),
  ],
  cells(svc, now) {
    const meta = rec(svc["metadata"]);
    const spec = rec(svc["spec"]);
    const clusterIp = strs(spec["clusterIPs"])[0] ?? str(spec["clusterIP"]);
    return [
      str(meta["name"]),
      str(spec["type"]) || "ClusterIP",
      clusterIp || "<none>",
      serviceExternalIp(svc),
      servicePorts(svc),
      since(meta["creationTimestamp"], now),
      formatLabels(spec["selector"]),
    ];
  },
};

const MAX_ENDPOINTS = 3;

/** ENDPOINTS: up to three `ip:port`, then ` + N more...`; `<none>` when empty. */
export function formatEndpoints(ep: Json): string {
  const list: string[] = [];
  let count = 0;
  const add = (s: string): void => {
    if (list.length < MAX_ENDPOINTS) list.push(s);
  };
  for (const subset of recs(ep["subsets"])) {
    const addresses = recs(subset["addresses"]).map((a) => str(a["ip"]));
    const ports = recs(subset["ports"]);
    if (ports.length === 0) {
      count += addresses.length;
      addresses.forEach(add);
      continue;
    }
    for (const p of ports) {
      count += addresses.length;
      for (const ip of addresses) add(ip.includes(":") ? `[${ip}]:${int(p["port"])}` : `${ip}:${int(p["port"])}`);
    }
  }
  if (list.length === 0) return "<none>";
  const joined = list.join(",");
  return count > MAX_ENDPOINTS ? `${joined} + ${count - MAX_ENDPOINTS} more...` : joined;
}

export const endpointsTable: KindTable = {
  columns: [NAME_COLUMN, col("Endpoints", "Endpoints is the list of endpoints of this service."), AGE_COLUMN],
  cells(ep, now) {
    const meta = rec(ep["metadata"]);
    return [str(meta["name"]), formatEndpoints(ep), since(meta["creationTimestamp"], now)];
  },
};
