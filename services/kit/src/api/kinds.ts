import type { Object as ApiObject } from "../gen/choreo/api/v1/api.js";
import type { ObjectMeta } from "../gen/choreo/meta/v1/meta.js";

/** The `$case` names of the Object oneof, one per kind. */
export type KindCase = NonNullable<ApiObject["kind"]>["$case"];

/** The TypeScript type of the object held under a given `$case`. */
export type KindValue<C extends KindCase> = Extract<NonNullable<ApiObject["kind"]>, { $case: C }>["value"];

/** Any object value (Pod, Node, …): all share apiVersion, kind and metadata. */
export type AnyObject = KindValue<KindCase>;

/** What the api, the gateway and the CLI know about one kind. */
export interface KindInfo {
  /** Key of the Object oneof. */
  readonly case: KindCase;
  readonly kind: string;
  readonly group: string;
  readonly version: string;
  /** group/version, or "v1" for the core group. */
  readonly apiVersion: string;
  /** Plural lower-case resource name used in paths and subjects. */
  readonly resource: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
  readonly namespaced: boolean;
  /** Listed by `kubectl get all`. */
  readonly categories: readonly string[];
  readonly hasStatus: boolean;
  readonly hasScale: boolean;
  /** Fully qualified protobuf message name (for the JSON codec). */
  readonly protoType: string;
  /** Field selectors this kind supports beyond metadata.name/namespace. */
  readonly selectableFields: readonly string[];
  /**
   * Owns dependents (pods) that the garbage collector follows: deleting one
   * with propagationPolicy Orphan or Foreground adds the GC's finalizer.
   */
  readonly ownsDependents: boolean;
}

const all = ["all"] as const;

function kind(k: Omit<KindInfo, "apiVersion" | "ownsDependents"> & { ownsDependents?: boolean }): KindInfo {
  return { ...k, apiVersion: k.group ? `${k.group}/${k.version}` : k.version, ownsDependents: k.ownsDependents ?? false };
}

/** Every kind choreo serves. */
export const KINDS: readonly KindInfo[] = [
  kind({
    case: "namespace",
    kind: "Namespace",
    group: "",
    version: "v1",
    resource: "namespaces",
    singular: "namespace",
    shortNames: ["ns"],
    namespaced: false,
    categories: [],
    hasStatus: true,
    hasScale: false,
    protoType: "choreo.core.v1.Namespace",
    selectableFields: ["status.phase"],
  }),
  kind({
    case: "node",
    kind: "Node",
    group: "",
    version: "v1",
    resource: "nodes",
    singular: "node",
    shortNames: ["no"],
    namespaced: false,
    categories: [],
    hasStatus: true,
    hasScale: false,
    protoType: "choreo.core.v1.Node",
    selectableFields: ["spec.unschedulable"],
  }),
  kind({
    case: "pod",
    kind: "Pod",
    group: "",
    version: "v1",
    resource: "pods",
    singular: "pod",
    shortNames: ["po"],
    namespaced: true,
    categories: all,
    hasStatus: true,
    hasScale: false,
    protoType: "choreo.core.v1.Pod",
    selectableFields: ["spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "status.phase", "status.podIP", "status.nominatedNodeName"],
  }),
  kind({
    case: "service",
    kind: "Service",
    group: "",
    version: "v1",
    resource: "services",
    singular: "service",
    shortNames: ["svc"],
    namespaced: true,
    categories: all,
    hasStatus: true,
    hasScale: false,
    protoType: "choreo.core.v1.Service",
    selectableFields: ["spec.clusterIP", "spec.type"],
  }),
  kind({
    case: "endpoints",
    kind: "Endpoints",
    group: "",
    version: "v1",
    resource: "endpoints",
    singular: "endpoints",
    shortNames: ["ep"],
    namespaced: true,
    categories: [],
    hasStatus: false,
    hasScale: false,
    protoType: "choreo.core.v1.Endpoints",
    selectableFields: [],
  }),
  kind({
    case: "replicationController",
    kind: "ReplicationController",
    group: "",
    version: "v1",
    resource: "replicationcontrollers",
    singular: "replicationcontroller",
    shortNames: ["rc"],
    namespaced: true,
    categories: all,
    hasStatus: true,
    hasScale: true,
    protoType: "choreo.core.v1.ReplicationController",
    selectableFields: ["status.replicas"],
    ownsDependents: true,
  }),
  kind({
    case: "event",
    kind: "Event",
    group: "",
    version: "v1",
    resource: "events",
    singular: "event",
    shortNames: ["ev"],
    namespaced: true,
    categories: [],
    hasStatus: false,
    hasScale: false,
    protoType: "choreo.core.v1.Event",
    selectableFields: [
      "involvedObject.kind",
      "involvedObject.namespace",
      "involvedObject.name",
      "involvedObject.uid",
      "involvedObject.apiVersion",
      "involvedObject.resourceVersion",
      "involvedObject.fieldPath",
      "reason",
      "reportingComponent",
      "source",
      "type",
    ],
  }),
  kind({
    case: "configMap",
    kind: "ConfigMap",
    group: "",
    version: "v1",
    resource: "configmaps",
    singular: "configmap",
    shortNames: ["cm"],
    namespaced: true,
    categories: [],
    hasStatus: false,
    hasScale: false,
    protoType: "choreo.core.v1.ConfigMap",
    selectableFields: [],
  }),
  kind({
    case: "secret",
    kind: "Secret",
    group: "",
    version: "v1",
    resource: "secrets",
    singular: "secret",
    shortNames: [],
    namespaced: true,
    categories: [],
    hasStatus: false,
    hasScale: false,
    protoType: "choreo.core.v1.Secret",
    selectableFields: ["type"],
  }),
  kind({
    case: "lease",
    kind: "Lease",
    group: "coordination.k8s.io",
    version: "v1",
    resource: "leases",
    singular: "lease",
    shortNames: [],
    namespaced: true,
    categories: [],
    hasStatus: false,
    hasScale: false,
    protoType: "choreo.coordination.v1.Lease",
    selectableFields: [],
  }),
  kind({
    case: "daemonSet",
    kind: "DaemonSet",
    group: "apps",
    version: "v1",
    resource: "daemonsets",
    singular: "daemonset",
    shortNames: ["ds"],
    namespaced: true,
    categories: all,
    hasStatus: true,
    hasScale: false,
    protoType: "choreo.apps.v1.DaemonSet",
    selectableFields: [],
    ownsDependents: true,
  }),
  kind({
    case: "replicaSet",
    kind: "ReplicaSet",
    group: "apps",
    version: "v1",
    resource: "replicasets",
    singular: "replicaset",
    shortNames: ["rs"],
    namespaced: true,
    categories: all,
    hasStatus: true,
    hasScale: true,
    protoType: "choreo.apps.v1.ReplicaSet",
    selectableFields: ["status.replicas"],
    ownsDependents: true,
  }),
  kind({
    case: "deployment",
    kind: "Deployment",
    group: "apps",
    version: "v1",
    resource: "deployments",
    singular: "deployment",
    shortNames: ["deploy"],
    namespaced: true,
    categories: all,
    hasStatus: true,
    hasScale: true,
    protoType: "choreo.apps.v1.Deployment",
    selectableFields: [],
    ownsDependents: true,
  }),
  kind({
    case: "job",
    kind: "Job",
    group: "batch",
    version: "v1",
    resource: "jobs",
    singular: "job",
    shortNames: [],
    namespaced: true,
    categories: all,
    hasStatus: true,
    hasScale: false,
    protoType: "choreo.batch.v1.Job",
    selectableFields: ["status.successful"],
    ownsDependents: true,
  }),
  kind({
    case: "cronJob",
    kind: "CronJob",
    group: "batch",
    version: "v1",
    resource: "cronjobs",
    singular: "cronjob",
    shortNames: ["cj"],
    namespaced: true,
    categories: all,
    hasStatus: true,
    hasScale: false,
    protoType: "choreo.batch.v1.CronJob",
    selectableFields: [],
    ownsDependents: true,
  }),
  kind({
    case: "podDisruptionBudget",
    kind: "PodDisruptionBudget",
    group: "policy",
    version: "v1",
    resource: "poddisruptionbudgets",
    singular: "poddisruptionbudget",
    shortNames: ["pdb"],
    namespaced: true,
    categories: [],
    hasStatus: true,
    hasScale: false,
    protoType: "choreo.policy.v1.PodDisruptionBudget",
    selectableFields: [],
  }),
  kind({
    case: "horizontalPodAutoscaler",
    kind: "HorizontalPodAutoscaler",
    group: "autoscaling",
    version: "v2",
    resource: "horizontalpodautoscalers",
    singular: "horizontalpodautoscaler",
    shortNames: ["hpa"],
    namespaced: true,
    categories: all,
    hasStatus: true,
    hasScale: false,
    protoType: "choreo.autoscaling.v2.HorizontalPodAutoscaler",
    selectableFields: [],
  }),
  kind({
    case: "role",
    kind: "Role",
    group: "rbac.authorization.k8s.io",
    version: "v1",
    resource: "roles",
    singular: "role",
    shortNames: [],
    namespaced: true,
    categories: [],
    hasStatus: false,
    hasScale: false,
    protoType: "choreo.rbac.v1.Role",
    selectableFields: [],
  }),
  kind({
    case: "clusterRole",
    kind: "ClusterRole",
    group: "rbac.authorization.k8s.io",
    version: "v1",
    resource: "clusterroles",
    singular: "clusterrole",
    shortNames: [],
    namespaced: false,
    categories: [],
    hasStatus: false,
    hasScale: false,
    protoType: "choreo.rbac.v1.ClusterRole",
    selectableFields: [],
  }),
  kind({
    case: "roleBinding",
    kind: "RoleBinding",
    group: "rbac.authorization.k8s.io",
    version: "v1",
    resource: "rolebindings",
    singular: "rolebinding",
    shortNames: [],
    namespaced: true,
    categories: [],
    hasStatus: false,
    hasScale: false,
    protoType: "choreo.rbac.v1.RoleBinding",
    selectableFields: [],
  }),
  kind({
    case: "clusterRoleBinding",
    kind: "ClusterRoleBinding",
    group: "rbac.authorization.k8s.io",
    version: "v1",
    resource: "clusterrolebindings",
    singular: "clusterrolebinding",
    shortNames: [],
    namespaced: false,
    categories: [],
    hasStatus: false,
    hasScale: false,
    protoType: "choreo.rbac.v1.ClusterRoleBinding",
    selectableFields: [],
  }),
  kind({
    case: "serviceAccount",
    kind: "ServiceAccount",
    group: "",
    version: "v1",
    resource: "serviceaccounts",
    singular: "serviceaccount",
    shortNames: ["sa"],
    namespaced: true,
    categories: [],
    hasStatus: false,
    hasScale: false,
    protoType: "choreo.core.v1.ServiceAccount",
    selectableFields: [],
  }),
  kind({
    case: "certificateSigningRequest",
    kind: "CertificateSigningRequest",
    group: "certificates.k8s.io",
    version: "v1",
    resource: "certificatesigningrequests",
    singular: "certificatesigningrequest",
    shortNames: ["csr"],
    namespaced: false,
    categories: [],
    hasStatus: true,
    hasScale: false,
    protoType: "choreo.certificates.v1.CertificateSigningRequest",
    selectableFields: ["spec.signerName"],
  }),
];

/** The kinds whose dependents the garbage collector follows (and whose deletion may carry its finalizers). */
export const GC_OWNER_KINDS: readonly KindInfo[] = KINDS.filter((k) => k.ownsDependents);

const byResource = new Map(KINDS.map((k) => [k.resource, k]));
const byCase = new Map(KINDS.map((k) => [k.case, k]));
const byKindName = new Map(KINDS.map((k) => [`${k.apiVersion}/${k.kind}`, k]));
const byAnyName = new Map<string, KindInfo>();
for (const k of KINDS) {
  for (const n of [k.resource, k.singular, k.kind.toLowerCase(), ...k.shortNames]) byAnyName.set(n, k);
}

/** The kind served under a plural resource name, or undefined. */
export function kindByResource(resource: string): KindInfo | undefined {
  return byResource.get(resource);
}

/** The kind of a oneof case. */
export function kindByCase(c: KindCase): KindInfo {
  const k = byCase.get(c);
  if (!k) throw new Error(`unknown kind case ${c}`);
  return k;
}

/** The kind named by apiVersion + kind, as in a manifest. */
export function kindByApiVersionKind(apiVersion: string, kindName: string): KindInfo | undefined {
  return byKindName.get(`${apiVersion}/${kindName}`);
}

/** Resolves what a user types (`po`, `pod`, `pods`, `rc`, `Pod`, `pods.v1`), like kubectl. */
export function kindByUserName(name: string): KindInfo | undefined {
  const n = name.toLowerCase();
  return byAnyName.get(n) ?? byAnyName.get(n.split(".")[0] ?? n);
}

/** The value inside an Object oneof. */
export function unwrap(o: ApiObject): AnyObject {
  if (!o.kind) throw new Error("empty object");
  return o.kind.value;
}

/** The kind info of an Object oneof. */
export function kindOf(o: ApiObject): KindInfo {
  if (!o.kind) throw new Error("empty object");
  return kindByCase(o.kind.$case);
}

/** Wraps a value into the Object oneof of the given kind. */
export function wrap<C extends KindCase>(c: C, value: KindValue<C>): ApiObject {
  return { kind: { $case: c, value } as NonNullable<ApiObject["kind"]> };
}

/** The metadata of an object, created empty when missing. */
export function metaOf(o: ApiObject): ObjectMeta {
  const v = unwrap(o);
  return v.metadata ?? emptyMeta();
}

/** An ObjectMeta with every field at its zero value. */
export function emptyMeta(init: Partial<ObjectMeta> = {}): ObjectMeta {
  return {
    name: "",
    generateName: "",
    namespace: "",
    uid: "",
    resourceVersion: "",
    generation: 0,
    creationTimestamp: "",
    deletionTimestamp: "",
    labels: {},
    annotations: {},
    ownerReferences: [],
    finalizers: [],
    managedFields: [],
    ...init,
  };
}

/** `namespace/name` (or `name` for cluster-scoped kinds): the work-queue key of an object. */
export function keyOf(meta: Pick<ObjectMeta, "namespace" | "name">): string {
  return meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name;
}

/** Splits a work-queue key into namespace and name. */
export function splitKey(key: string): { namespace: string; name: string } {
  const i = key.indexOf("/");
  return i < 0 ? { namespace: "", name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
