// One describer per kind: the object (and what the command fetched beside
// it: its pods, its endpoints) → kubectl-describe lines. Pure.
import { at, age, arr, map, str, Writer, type Obj } from "./format.js";

/** What a describer gets: the object and related objects the command looked up. */
export interface Related {
  /** Pods the object selects or owns (RC, DaemonSet, Job), or bound to it (node). */
  pods?: Obj[];
  /** The Endpoints of a Service. */
  endpoints?: Obj;
}

export type Describer = (o: Obj, r: Related, now: number) => Writer;

function meta(w: Writer, o: Obj, now: number, namespaced = true): void {
  w.field("Name", at(o, "metadata.name"));
  if (namespaced) w.field("Namespace", at(o, "metadata.namespace"));
  w.mapField("Labels", map(at(o, "metadata.labels")));
  w.mapField("Annotations", map(at(o, "metadata.annotations")), 0, ": ");
  if (at(o, "metadata.creationTimestamp"))
    w.field("CreationTimestamp", `${str(at(o, "metadata.creationTimestamp"))} (${age(at(o, "metadata.creationTimestamp"), now)} ago)`);
}

function controlledBy(w: Writer, o: Obj): void {
  const ref = arr(at(o, "metadata.ownerReferences")).find((r) => r["controller"] === true);
  if (ref) w.field("Controlled By", `${str(ref["kind"])}/${str(ref["name"])}`);
}

function podsStatus(w: Writer, pods: Obj[]): void {
  const n = (phase: string) => pods.filter((p) => at(p, "status.phase") === phase).length;
  w.field("Pods Status", `${n("Running")} Running / ${n("Pending")} Waiting / ${n("Succeeded")} Succeeded / ${n("Failed")} Failed`);
}

function containers(w: Writer, spec: Obj, status: Obj | undefined): void {
  w.field("Containers", undefined);
  for (const c of arr(spec["containers"])) {
    const cs = arr(status?.["containerStatuses"]).find((x) => x["name"] === c["name"]);
    w.field(str(c["name"]), undefined, 1);
    w.field("Image", c["image"], 2);
    const ports = arr(c["ports"]).map((p) => `${str(p["containerPort"])}/${str(p["protocol"], "TCP")}${p["name"] ? ` (${str(p["name"])})` : ""}`);
    w.field("Port", ports.join(", ") || "<none>", 2);
    if (cs) {
      const state = map(cs["state"]) as unknown as Obj;
      const [name, detail] = Object.entries(state).find(([, v]) => v && typeof v === "object") ?? ["", {}];
      w.field("State", name ? name[0]!.toUpperCase() + name.slice(1) : "<unknown>", 2);
      const d = detail as Obj;
      if (d["reason"]) w.field("Reason", d["reason"], 3);
      if (d["exitCode"] !== undefined) w.field("Exit Code", d["exitCode"], 3);
      if (d["startedAt"]) w.field("Started", d["startedAt"], 3);
      w.field("Ready", cs["ready"] === true ? "True" : "False", 2);
      w.field("Restart Count", cs["restartCount"] ?? 0, 2);
    }
    const req = map(at(c, "resources.requests"));
    if (Object.keys(req).length) w.mapField("Requests", req, 2, ":  ");
    const limits = map(at(c, "resources.limits"));
    if (Object.keys(limits).length) w.mapField("Limits", limits, 2, ":  ");
    const env = arr(c["env"]).map((e) => `${str(e["name"])}=${str(e["value"], "")}`);
    if (env.length) w.listField("Environment", env, 2);
  }
}

function conditions(w: Writer, conds: Obj[]): void {
  if (conds.length === 0) return;
  w.field("Conditions", undefined);
  w.table(
    ["Type", "Status"],
    conds.map((c) => [str(c["type"]), str(c["status"])]),
  );
}

const pod: Describer = (o, _r, now) => {
  const w = new Writer();
  meta(w, o, now);
  w.field("Priority", at(o, "spec.priority") ?? 0);
  w.field("Node", at(o, "spec.nodeName") ? `${str(at(o, "spec.nodeName"))}/${str(at(o, "status.hostIP"), "")}` : "<none>");
  if (at(o, "status.startTime")) w.field("Start Time", at(o, "status.startTime"));
  w.field("Status", at(o, "metadata.deletionTimestamp") ? "Terminating" : at(o, "status.phase"));
  if (at(o, "status.reason")) w.field("Reason", at(o, "status.reason"));
  w.field("IP", at(o, "status.podIP"));
  if (at(o, "status.nominatedNodeName")) w.field("NominatedNodeName", at(o, "status.nominatedNodeName"));
  controlledBy(w, o);
  containers(w, map(o["spec"]) as unknown as Obj, map(o["status"]) as unknown as Obj);
  conditions(w, arr(at(o, "status.conditions")));
  w.field("QoS Class", at(o, "status.qosClass"));
  w.mapField("Node-Selectors", map(at(o, "spec.nodeSelector")));
  w.listField(
    "Tolerations",
    arr(at(o, "spec.tolerations")).map(
      (t) =>
        `${str(t["key"], "")}${t["operator"] === "Exists" ? "" : `=${str(t["value"], "")}`}${t["effect"] ? `:${str(t["effect"])}` : ""}${t["tolerationSeconds"] !== undefined ? ` for ${str(t["tolerationSeconds"])}s` : ""}`,
    ),
  );
  return w;
};

const node: Describer = (o, r, now) => {
  const w = new Writer();
  meta(w, o, now, false);
  w.listField(
    "Taints",
    arr(at(o, "spec.taints")).map((t) => `${str(t["key"])}${t["value"] ? `=${str(t["value"])}` : ""}:${str(t["effect"])}`),
  );
  w.field("Unschedulable", at(o, "spec.unschedulable") === true ? "true" : "false");
  w.field("Conditions", undefined);
  w.table(
    ["Type", "Status", "LastHeartbeatTime", "Reason", "Message"],
    arr(at(o, "status.conditions")).map((c) => [
      str(c["type"]),
      str(c["status"]),
      str(c["lastHeartbeatTime"], ""),
      str(c["reason"], ""),
      str(c["message"], ""),
    ]),
  );
  w.listField(
    "Addresses",
    arr(at(o, "status.addresses")).map((a) => `${str(a["type"])}: ${str(a["address"])}`),
  );
  w.mapField("Capacity", map(at(o, "status.capacity")), 0, ":  ");
  w.mapField("Allocatable", map(at(o, "status.allocatable")), 0, ":  ");
  w.field("PodCIDR", at(o, "spec.podCIDR"));
  const pods = (r.pods ?? []).filter((p) => at(p, "status.phase") !== "Succeeded" && at(p, "status.phase") !== "Failed");
  w.field("Non-terminated Pods", `(${pods.length} in total)`);
  if (pods.length) {
    w.table(
      ["Namespace", "Name", "CPU Requests", "Memory Requests", "Age"],
      pods.map((p) => {
        const req = arr(at(p, "spec.containers")).map((c) => map(at(c, "resources.requests")));
        return [
          str(at(p, "metadata.namespace")),
          str(at(p, "metadata.name")),
          req
            .map((x) => x["cpu"])
            .filter(Boolean)
            .join("+") || "0",
          req
            .map((x) => x["memory"])
            .filter(Boolean)
            .join("+") || "0",
          age(at(p, "metadata.creationTimestamp"), now),
        ];
      }),
    );
  }
  return w;
};

function podTemplate(w: Writer, t: Obj): void {
  w.field("Pod Template", undefined);
  w.mapField("Labels", map(at(t, "metadata.labels")), 1);
  const spec = map(t["spec"]) as unknown as Obj;
  w.field("Containers", undefined, 1);
  for (const c of arr(spec["containers"])) {
    w.field(str(c["name"]), undefined, 2);
    w.field("Image", c["image"], 3);
    w.field(
      "Port",
      arr(c["ports"])
        .map((p) => `${str(p["containerPort"])}/${str(p["protocol"], "TCP")}`)
        .join(", ") || "<none>",
      3,
    );
  }
}

const replicationController: Describer = (o, r, now) => {
  const w = new Writer();
  meta(w, o, now);
  w.mapField("Selector", map(at(o, "spec.selector")));
  w.field("Replicas", `${str(at(o, "status.replicas"), "0")} current / ${str(at(o, "spec.replicas"), "0")} desired`);
  podsStatus(w, r.pods ?? []);
  podTemplate(w, map(at(o, "spec.template")) as unknown as Obj);
  conditions(w, arr(at(o, "status.conditions")));
  return w;
};

const daemonSet: Describer = (o, r, now) => {
  const w = new Writer();
  meta(w, o, now);
  w.mapField("Selector", map(at(o, "spec.selector.matchLabels")));
  w.mapField("Node-Selector", map(at(o, "spec.template.spec.nodeSelector")));
  w.field("Desired Number of Nodes Scheduled", at(o, "status.desiredNumberScheduled") ?? 0);
  w.field("Current Number of Nodes Scheduled", at(o, "status.currentNumberScheduled") ?? 0);
  w.field("Number of Nodes Scheduled with Up-to-date Pods", at(o, "status.updatedNumberScheduled") ?? 0);
  w.field("Number of Nodes Scheduled with Available Pods", at(o, "status.numberAvailable") ?? 0);
  w.field("Number of Nodes Misscheduled", at(o, "status.numberMisscheduled") ?? 0);
  podsStatus(w, r.pods ?? []);
  w.field("Update Strategy", at(o, "spec.updateStrategy.type"));
  podTemplate(w, map(at(o, "spec.template")) as unknown as Obj);
  return w;
};

const job: Describer = (o, r, now) => {
  const w = new Writer();
  meta(w, o, now);
  w.mapField("Selector", map(at(o, "spec.selector.matchLabels")));
  w.field("Parallelism", at(o, "spec.parallelism"));
  w.field("Completions", at(o, "spec.completions"));
  w.field("Completion Mode", at(o, "spec.completionMode"));
  if (at(o, "status.startTime")) w.field("Start Time", at(o, "status.startTime"));
  if (at(o, "status.completionTime")) w.field("Completed At", at(o, "status.completionTime"));
  if (at(o, "spec.activeDeadlineSeconds") !== undefined) w.field("Active Deadline Seconds", `${str(at(o, "spec.activeDeadlineSeconds"))}s`);
  w.field(
    "Pods Statuses",
    `${str(at(o, "status.active"), "0")} Active / ${str(at(o, "status.succeeded"), "0")} Succeeded / ${str(at(o, "status.failed"), "0")} Failed`,
  );
  podTemplate(w, map(at(o, "spec.template")) as unknown as Obj);
  conditions(w, arr(at(o, "status.conditions")));
  return w;
};

function endpointList(ep: Obj | undefined): string {
  const out: string[] = [];
  for (const s of arr(ep?.["subsets"]))
    for (const a of arr(s["addresses"]))
      for (const p of arr(s["ports"]).length ? arr(s["ports"]) : [{}]) out.push(`${str(a["ip"])}${p["port"] !== undefined ? `:${str(p["port"])}` : ""}`);
  return out.join(",") || "<none>";
}

const service: Describer = (o, r, now) => {
  const w = new Writer();
  meta(w, o, now);
  w.mapField("Selector", map(at(o, "spec.selector")));
  w.field("Type", at(o, "spec.type"));
  w.field("IP", at(o, "spec.clusterIP"));
  for (const p of arr(at(o, "spec.ports"))) {
    w.field("Port", `${str(p["name"], "<unset>")}  ${str(p["port"])}/${str(p["protocol"], "TCP")}`);
    w.field("TargetPort", `${str(p["targetPort"], str(p["port"]))}/${str(p["protocol"], "TCP")}`);
  }
  w.field("Endpoints", endpointList(r.endpoints));
  w.field("Session Affinity", at(o, "spec.sessionAffinity") ?? "None");
  return w;
};

const endpoints: Describer = (o, _r, now) => {
  const w = new Writer();
  meta(w, o, now);
  w.field("Subsets", undefined);
  for (const s of arr(o["subsets"])) {
    w.field(
      "Addresses",
      arr(s["addresses"])
        .map((a) => str(a["ip"]))
        .join(",") || "<none>",
      1,
    );
    w.field(
      "NotReadyAddresses",
      arr(s["notReadyAddresses"])
        .map((a) => str(a["ip"]))
        .join(",") || "<none>",
      1,
    );
    w.field("Ports", undefined, 1);
    w.table(
      ["Name", "Port", "Protocol"],
      arr(s["ports"]).map((p) => [str(p["name"], "<unset>"), str(p["port"]), str(p["protocol"], "TCP")]),
      2,
    );
  }
  return w;
};

/** kubectl's describeConfigMap: each data value under `key:` and a rule; binaryData by size. */
const configMap: Describer = (o) => {
  const w = new Writer();
  w.field("Name", at(o, "metadata.name"));
  w.field("Namespace", at(o, "metadata.namespace"));
  w.mapField("Labels", map(at(o, "metadata.labels")));
  w.mapField("Annotations", map(at(o, "metadata.annotations")), 0, ": ");
  w.line();
  w.line("Data");
  w.line("====");
  for (const [k, v] of Object.entries(map(o["data"])).sort(([a], [b]) => a.localeCompare(b))) {
    w.line(`${k}:`);
    w.line("----");
    w.line(v);
    w.line();
  }
  w.line();
  w.line("BinaryData");
  w.line("====");
  for (const [k, v] of Object.entries(map(o["binaryData"])).sort(([a], [b]) => a.localeCompare(b))) w.line(`${k}: ${Buffer.from(v, "base64").length} bytes`);
  w.line();
  return w;
};

/** kubectl's describeCertificateSigningRequest (without the request's subject, which needs the PEM parsed). */
const certificateSigningRequest: Describer = (o, _r, now) => {
  const w = new Writer();
  meta(w, o, now, false);
  w.field("Requesting User", str(at(o, "spec.username"), "<none>"));
  w.field("Signer", str(at(o, "spec.signerName"), "<none>"));
  const seconds = at(o, "spec.expirationSeconds");
  w.field("Requested Duration", typeof seconds === "number" ? `${seconds}s` : "<none>");
  const set = arr(at(o, "status.conditions"))
    .filter((c) => c["status"] !== "False" && c["type"])
    .map((c) => str(c["type"]));
  w.field("Status", [...(set.length ? set : ["Pending"]), ...(at(o, "status.certificate") ? ["Issued"] : [])].join(","));
  return w;
};

/** Describers by kind. */
export const DESCRIBERS: Record<string, Describer> = {
  Pod: pod,
  Node: node,
  ReplicationController: replicationController,
  DaemonSet: daemonSet,
  Job: job,
  Service: service,
  Endpoints: endpoints,
  ConfigMap: configMap,
  CertificateSigningRequest: certificateSigningRequest,
};
