// OpenAPI schemas of every served kind, generated once from the protobuf
// descriptor (the same field plans the Kubernetes JSON codec walks) and the
// proto comments, named as Kubernetes names its definitions.
import { createRequire } from "node:module";
import { KINDS, type KindInfo } from "@choreo/kit";
import { planOf, type FieldPlan, type MessagePlan } from "@choreo/kit/kube-json";

/** A JSON schema object (swagger 2.0 / OpenAPI 3.0 subset). */
export type Schema = Record<string, unknown>;

/** A group/version/kind as `x-kubernetes-group-version-kind` lists it. */
export interface Gvk {
  group: string;
  version: string;
  kind: string;
}

const META = "io.k8s.apimachinery.pkg.apis.meta.v1";
export const INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
export const QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity";
export const TIME = `${META}.Time`;
export const MICRO_TIME = `${META}.MicroTime`;

// Resource maps hold quantities (the codec's QUANTITY_MAPS, the same fact).
const QUANTITY_MAPS = new Set(["limits", "requests", "capacity", "allocatable"]);

// Kubernetes' conventional descriptions of the fields every object of a kind
// has, for the proto messages that leave them uncommented.
const COMMON: Record<string, string> = {
  apiVersion:
    "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.",
  kind: "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase.",
  metadata: "Standard object's metadata.",
  spec: "Specification of the desired behavior of the object.",
  status: "Most recently observed status of the object. Populated by the system. Read-only.",
};

interface DescriptorNode {
  nested?: Record<string, DescriptorNode>;
  fields?: Record<string, { comment?: string }>;
  comment?: string;
}

const require = createRequire(import.meta.url);
const descriptor = require("@choreo/kit/descriptor.json") as DescriptorNode;

/** The descriptor node of a fully qualified message name. */
function node(fullName: string): DescriptorNode | undefined {
  let n: DescriptorNode | undefined = descriptor;
  for (const part of fullName.split(".")) n = n?.nested?.[part];
  return n;
}

/** The OpenAPI description of a proto comment: lines joined as Go's doc comments are. */
function describe(comment: string | undefined): string | undefined {
  const text = comment
    ?.split("\n")
    .map((l) => l.trim())
    .join(" ")
    .trim();
  return text ? text : undefined;
}

/** Kubernetes' definition name of a proto message: `choreo.core.v1.Pod` → `io.k8s.api.core.v1.Pod`. */
export function definitionName(fullName: string): string {
  if (fullName === "choreo.core.v1.IntOrString") return INT_OR_STRING;
  const [root, pkg, ...rest] = fullName.split(".");
  if (root !== "choreo" || !pkg) throw new Error(`no Kubernetes name for ${fullName}`);
  return pkg === "meta" ? `${META}.${rest.slice(1).join(".")}` : `io.k8s.api.${pkg}.${rest.join(".")}`;
}

// Fields Kubernetes requires (its `required` lists), by definition name; only
// fields a client writes: status-side lists are left out so that an object
// read back and edited validates whatever the server omitted.
const REQUIRED: Record<string, string[]> = {
  "io.k8s.api.core.v1.PodSpec": ["containers"],
  "io.k8s.api.core.v1.Container": ["name"],
  "io.k8s.api.core.v1.ContainerPort": ["containerPort"],
  "io.k8s.api.core.v1.EnvVar": ["name"],
  "io.k8s.api.core.v1.VolumeMount": ["name", "mountPath"],
  "io.k8s.api.core.v1.Volume": ["name"],
  "io.k8s.api.core.v1.ServicePort": ["port"],
  "io.k8s.api.core.v1.HTTPGetAction": ["port"],
  "io.k8s.api.core.v1.HTTPHeader": ["name", "value"],
  "io.k8s.api.core.v1.TCPSocketAction": ["port"],
  "io.k8s.api.core.v1.ObjectFieldSelector": ["fieldPath"],
  "io.k8s.api.core.v1.Taint": ["key", "effect"],
  "io.k8s.api.core.v1.Binding": ["target"],
  "io.k8s.api.core.v1.Event": ["metadata", "involvedObject"],
  "io.k8s.api.core.v1.EndpointPort": ["port"],
  "io.k8s.api.core.v1.EndpointAddress": ["ip"],
  "io.k8s.api.apps.v1.DaemonSetSpec": ["selector", "template"],
  "io.k8s.api.apps.v1.ReplicaSetSpec": ["selector"],
  "io.k8s.api.apps.v1.DeploymentSpec": ["selector", "template"],
  "io.k8s.api.batch.v1.JobSpec": ["template"],
  "io.k8s.api.batch.v1.CronJobSpec": ["schedule", "jobTemplate"],
  "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec": ["scaleTargetRef", "maxReplicas"],
  "io.k8s.api.autoscaling.v2.CrossVersionObjectReference": ["kind", "name"],
  "io.k8s.api.autoscaling.v2.MetricSpec": ["type"],
  "io.k8s.api.autoscaling.v2.MetricTarget": ["type"],
  "io.k8s.api.autoscaling.v2.ResourceMetricSource": ["name", "target"],
  "io.k8s.api.autoscaling.v2.HPAScalingPolicy": ["type", "value", "periodSeconds"],
  "io.k8s.api.rbac.v1.PolicyRule": ["verbs"],
  "io.k8s.api.rbac.v1.Subject": ["kind", "name"],
  "io.k8s.api.rbac.v1.RoleRef": ["apiGroup", "kind", "name"],
  "io.k8s.api.rbac.v1.RoleBinding": ["roleRef"],
  "io.k8s.api.rbac.v1.ClusterRoleBinding": ["roleRef"],
  [`${META}.OwnerReference`]: ["apiVersion", "kind", "name", "uid"],
  [`${META}.LabelSelectorRequirement`]: ["key", "operator"],
};

// Strategic-merge keys of the lists merged by key (`x-kubernetes-patch-merge-key`,
// docs/kube-api-notes.md, writes), by definition and field.
const MERGE_KEYS: Record<string, string> = {
  "io.k8s.api.core.v1.PodSpec.containers": "name",
  "io.k8s.api.core.v1.PodSpec.initContainers": "name",
  "io.k8s.api.core.v1.PodSpec.volumes": "name",
  "io.k8s.api.core.v1.Container.env": "name",
  "io.k8s.api.core.v1.Container.ports": "containerPort",
  "io.k8s.api.core.v1.Container.volumeMounts": "mountPath",
  "io.k8s.api.core.v1.ServiceSpec.ports": "port",
  "io.k8s.api.core.v1.PodStatus.conditions": "type",
  "io.k8s.api.core.v1.NodeStatus.conditions": "type",
  "io.k8s.api.core.v1.ReplicationControllerStatus.conditions": "type",
  "io.k8s.api.apps.v1.DaemonSetStatus.conditions": "type",
  "io.k8s.api.apps.v1.ReplicaSetStatus.conditions": "type",
  "io.k8s.api.apps.v1.DeploymentStatus.conditions": "type",
  "io.k8s.api.batch.v1.JobStatus.conditions": "type",
  "io.k8s.api.policy.v1.PodDisruptionBudgetStatus.conditions": "type",
  "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus.conditions": "type",
};

function ref(name: string): Schema {
  return { $ref: `#/definitions/${name}` };
}

function scalarSchema(fp: FieldPlan, scalar: string | undefined): Schema {
  switch (scalar) {
    case "bool":
      return { type: "boolean" };
    case "int32":
    case "uint32":
    case "sint32":
    case "fixed32":
    case "sfixed32":
      return { type: "integer", format: "int32" };
    case "int64":
    case "uint64":
    case "sint64":
    case "fixed64":
    case "sfixed64":
      return { type: "integer", format: "int64" };
    case "double":
      return { type: "number", format: "double" };
    case "float":
      return { type: "number", format: "float" };
    case "bytes":
      return { type: "string", format: "byte" };
    default:
      return isTime(fp) ? ref(isMicroTime(fp) ? MICRO_TIME : TIME) : { type: "string" };
  }
}

/** RFC 3339 strings: Kubernetes' Time fields (`creationTimestamp`, `lastTransitionTime`, `startedAt`). */
function isTime(fp: FieldPlan): boolean {
  return fp.kind === "scalar" && fp.scalar === "string" && /(Timestamp|Time|At)$/.test(fp.jsonName);
}

// Kubernetes' MicroTime fields (Lease acquire/renew, Event eventTime).
function isMicroTime(fp: FieldPlan): boolean {
  return ["acquireTime", "renewTime", "eventTime"].includes(fp.jsonName);
}

/** The schema of one value (a field, an element, a map value). */
function valueSchema(fp: FieldPlan, need: (p: MessagePlan) => string): Schema {
  if (fp.message) return ref(need(fp.message));
  if (fp.kind === "map" && QUANTITY_MAPS.has(fp.jsonName)) return ref(QUANTITY);
  return scalarSchema(fp, fp.scalar);
}

function messageSchema(plan: MessagePlan, need: (p: MessagePlan) => string): Schema {
  const name = definitionName(plan.fullName);
  const desc = node(plan.fullName);
  const properties: Record<string, Schema> = {};
  // An object of a kind (apiVersion and kind at the top): the conventional descriptions apply.
  const topLevel = plan.byJson.has("apiVersion") && plan.byJson.has("kind");
  for (const fp of plan.fields) {
    const value = valueSchema(fp, need);
    let s: Schema = fp.kind === "repeated" ? { type: "array", items: value } : fp.kind === "map" ? { type: "object", additionalProperties: value } : value;
    const description = describe(desc?.fields?.[fp.tsName]?.comment) ?? (topLevel ? COMMON[fp.jsonName] : undefined);
    if (description) s = { description, ...s };
    const mergeKey = MERGE_KEYS[`${name}.${fp.jsonName}`];
    if (mergeKey) s = { ...s, "x-kubernetes-patch-merge-key": mergeKey, "x-kubernetes-patch-strategy": "merge" };
    properties[fp.jsonName] = s;
  }
  const out: Schema = { type: "object", properties };
  const description = describe(desc?.comment);
  if (description) out["description"] = description;
  const required = (REQUIRED[name] ?? []).filter((f) => f in properties);
  if (required.length) out["required"] = required;
  return out;
}

const BUILTIN: Record<string, Schema> = {
  [INT_OR_STRING]: {
    description:
      "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML marshalling and unmarshalling, it produces or consumes the inner type.  This allows you to have, for example, a JSON field that can accept a name or number.",
    type: "string",
    format: "int-or-string",
  },
  [QUANTITY]: {
    description:
      'Quantity is a fixed-point representation of a number: a decimal with an optional SI ("m", "k", "M", "G") or binary ("Ki", "Mi", "Gi") suffix, as a string: "500m", "1Gi", "2".',
    type: "string",
  },
  [TIME]: {
    description: "Time is a timestamp in RFC 3339 form, second precision, UTC (2006-01-02T15:04:05Z).",
    type: "string",
    format: "date-time",
  },
  [MICRO_TIME]: {
    description: "MicroTime is a timestamp in RFC 3339 form with microseconds (2006-01-02T15:04:05.000000Z).",
    type: "string",
    format: "date-time",
  },
};

/** The group/version/kinds of a definition: the served kinds, their lists, and the meta kinds. */
function gvks(): Map<string, Gvk[]> {
  const out = new Map<string, Gvk[]>();
  const add = (name: string, g: Gvk) => out.set(name, [...(out.get(name) ?? []), g]);
  for (const k of KINDS) {
    add(definitionName(k.protoType), { group: k.group, version: k.version, kind: k.kind });
    add(listName(k), { group: k.group, version: k.version, kind: `${k.kind}List` });
  }
  add("io.k8s.api.autoscaling.v1.Scale", { group: "autoscaling", version: "v1", kind: "Scale" });
  add("io.k8s.api.core.v1.Binding", { group: "", version: "v1", kind: "Binding" });
  add("io.k8s.api.policy.v1.Eviction", { group: "policy", version: "v1", kind: "Eviction" });
  add(`${META}.Status`, { group: "", version: "v1", kind: "Status" });
  for (const gv of new Set(KINDS.map((k) => `${k.group}/${k.version}`))) {
    const [group = "", version = ""] = gv.split("/");
    add(`${META}.DeleteOptions`, { group, version, kind: "DeleteOptions" });
  }
  return out;
}

/** The definition name of a kind's list (`io.k8s.api.core.v1.PodList`). */
export function listName(k: KindInfo): string {
  return `${definitionName(k.protoType)}List`;
}

function listSchema(k: KindInfo): Schema {
  return {
    description: `${k.kind}List is a list of ${k.kind} objects.`,
    type: "object",
    required: ["items"],
    properties: {
      apiVersion: { description: COMMON["apiVersion"], type: "string" },
      items: { description: `List of ${k.resource}.`, type: "array", items: ref(definitionName(k.protoType)) },
      kind: { description: COMMON["kind"], type: "string" },
      metadata: { description: "Standard list metadata.", ...ref(`${META}.ListMeta`) },
    },
  };
}

let cached: Record<string, Schema> | undefined;

/** Every definition (swagger 2.0 form, refs `#/definitions/NAME`), sorted by name; built once. */
export function definitions(): Record<string, Schema> {
  if (cached) return cached;
  const defs: Record<string, Schema> = { ...BUILTIN };
  const pending: MessagePlan[] = [];
  const need = (p: MessagePlan): string => {
    const name = definitionName(p.fullName);
    if (!(name in defs) && !pending.includes(p)) pending.push(p);
    return name;
  };
  for (const k of KINDS) need(planOf(k.protoType));
  for (const t of [
    "choreo.autoscaling.v1.Scale",
    "choreo.core.v1.Binding",
    "choreo.policy.v1.Eviction",
    "choreo.meta.v1.Status",
    "choreo.meta.v1.DeleteOptions",
    "choreo.meta.v1.ListMeta",
  ])
    need(planOf(t));
  for (let p = pending.shift(); p; p = pending.shift()) {
    const name = definitionName(p.fullName);
    if (!(name in defs)) defs[name] = messageSchema(p, need);
  }
  for (const k of KINDS) defs[listName(k)] = listSchema(k);
  for (const [name, list] of gvks()) {
    const d = defs[name];
    if (d) d["x-kubernetes-group-version-kind"] = list;
  }
  cached = Object.fromEntries(Object.entries(defs).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return cached;
}
