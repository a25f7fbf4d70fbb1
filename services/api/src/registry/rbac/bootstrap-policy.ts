// The default roles and bindings the api keeps in place (Kubernetes'
// plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go and
// controller_policy.go), restricted to the kinds and subresources choreo
// serves: cluster-admin, the aggregated admin/edit/view and the
// system:aggregate-to-* roles that hold their rules, the discovery and
// basic-user roles every authenticated user has, and the least-privilege
// roles of choreo's own components, each bound to the identity it runs as.
import { emptyMeta } from "@choreo/kit";
import { ClusterRole, ClusterRoleBinding, PolicyRule, Subject } from "@choreo/kit/gen/choreo/rbac/v1/rbac";
import { RBAC_GROUP } from "./strategy.js";

/** Kubernetes' annotation: the api reconciles a default role or binding carrying it as "true". */
export const AUTOUPDATE_ANNOTATION = "rbac.authorization.kubernetes.io/autoupdate";
/** The label of every default role and binding. */
export const BOOTSTRAP_LABEL = "kubernetes.io/bootstrapping";
export const AGGREGATE_TO = (role: "admin" | "edit" | "view") => `rbac.authorization.k8s.io/aggregate-to-${role}`;

const READ = ["get", "list", "watch"];
const WRITE = ["create", "update", "patch", "delete", "deletecollection"];
const READ_WRITE = [...READ, ...WRITE];
// get: the kit's EventRecorder reads an event back before counting a repeat into it.
const EVENTS = ["get", "create", "update", "patch"];

const CORE = "";
const APPS = "apps";
const BATCH = "batch";
const AUTOSCALING = "autoscaling";
const POLICY = "policy";
const COORDINATION = "coordination.k8s.io";
const AUTHORIZATION = "authorization.k8s.io";
const AUTHENTICATION = "authentication.k8s.io";
const METRICS = "metrics.k8s.io";

/** A resource rule: verbs on resources of one API group. */
function rule(verbs: string[], group: string, resources: string[], resourceNames: string[] = []): PolicyRule {
  return PolicyRule.fromPartial({ verbs, apiGroups: [group], resources, resourceNames });
}

/** A non-resource rule: verbs on URL paths. */
function urls(verbs: string[], nonResourceUrls: string[]): PolicyRule {
  return PolicyRule.fromPartial({ verbs, nonResourceUrls });
}

function clusterRole(
  name: string,
  rules: PolicyRule[],
  more: { labels?: Record<string, string>; aggregateFrom?: "admin" | "edit" | "view" } = {},
): ClusterRole {
  return ClusterRole.fromPartial({
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: "ClusterRole",
    metadata: emptyMeta({ name, labels: { [BOOTSTRAP_LABEL]: "rbac-defaults", ...more.labels }, annotations: { [AUTOUPDATE_ANNOTATION]: "true" } }),
    rules,
    aggregationRule: more.aggregateFrom
      ? { clusterRoleSelectors: [{ matchLabels: { [AGGREGATE_TO(more.aggregateFrom)]: "true" }, matchExpressions: [] }] }
      : undefined,
  });
}

function subject(kind: "User" | "Group", name: string): Subject {
  return Subject.fromPartial({ kind, apiGroup: RBAC_GROUP, name });
}

function binding(name: string, role: string, subjects: Subject[]): ClusterRoleBinding {
  return ClusterRoleBinding.fromPartial({
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: "ClusterRoleBinding",
    metadata: emptyMeta({ name, labels: { [BOOTSTRAP_LABEL]: "rbac-defaults" }, annotations: { [AUTOUPDATE_ANNOTATION]: "true" } }),
    subjects,
    roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name: role },
  });
}

/** The workload kinds of apps/v1 and batch/v1 choreo serves. */
const APPS_KINDS = ["daemonsets", "deployments", "replicasets"];
const BATCH_KINDS = ["jobs", "cronjobs"];

/** system:aggregate-to-view: read access to what a namespace holds, secrets and escalating subresources excepted. */
const VIEW_RULES = [
  rule(READ, CORE, [
    "pods",
    "replicationcontrollers",
    "replicationcontrollers/scale",
    "serviceaccounts",
    "services",
    "services/status",
    "endpoints",
    "configmaps",
  ]),
  rule(READ, CORE, ["events", "pods/status", "namespaces/status", "replicationcontrollers/status", "pods/log"]),
  rule(READ, CORE, ["namespaces"]),
  rule(READ, APPS, [
    "daemonsets",
    "daemonsets/status",
    "deployments",
    "deployments/status",
    "deployments/scale",
    "replicasets",
    "replicasets/status",
    "replicasets/scale",
  ]),
  rule(READ, AUTOSCALING, ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
  rule(READ, BATCH, ["jobs", "cronjobs", "cronjobs/status", "jobs/status"]),
  rule(READ, POLICY, ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
  rule(READ, METRICS, ["pods"]),
];

/** system:aggregate-to-edit: writes to a namespace's objects, secrets and exec/attach/port-forward included; no roles. */
const EDIT_RULES = [
  rule(READ, CORE, ["pods/attach", "pods/exec", "pods/portforward", "secrets"]),
  rule(["impersonate"], CORE, ["serviceaccounts"]),
  rule(WRITE, CORE, ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/ephemeralcontainers"]),
  rule(["create"], CORE, ["pods/eviction"]),
  rule(WRITE, CORE, ["replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "configmaps", "secrets", "events"]),
  rule(["create"], CORE, ["serviceaccounts/token"]),
  rule(WRITE, APPS, ["daemonsets", "deployments", "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale"]),
  rule(WRITE, AUTOSCALING, ["horizontalpodautoscalers"]),
  rule(WRITE, BATCH, BATCH_KINDS),
  rule(WRITE, POLICY, ["poddisruptionbudgets"]),
  rule(READ_WRITE, COORDINATION, ["leases"]),
];

/** system:aggregate-to-admin: what admin has beyond edit — a namespace's roles and bindings. */
const ADMIN_RULES = [rule(["create"], AUTHORIZATION, ["localsubjectaccessreviews"]), rule(READ_WRITE, RBAC_GROUP, ["roles", "rolebindings"])];

/** The URLs discovery needs (system:discovery) and those anyone may read (system:public-info-viewer). */
const PUBLIC_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"];
const DISCOVERY_URLS = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"];

/** The scheduler (user system:kube-scheduler): binds pods, and runs choreo's node lifecycle controller (node taints and Ready=Unknown, pods of lost nodes). */
const SCHEDULER_RULES = [
  rule(EVENTS, CORE, ["events"]),
  rule(READ, CORE, ["nodes", "namespaces", "services", "replicationcontrollers"]),
  rule(["update", "patch"], CORE, ["nodes", "nodes/status"]),
  rule([...READ, "delete"], CORE, ["pods"]),
  rule(["create"], CORE, ["bindings", "pods/binding"]),
  rule(["patch", "update"], CORE, ["pods/status"]),
  rule(READ, APPS, ["replicasets", "daemonsets"]),
  rule(READ, POLICY, ["poddisruptionbudgets"]),
  rule(READ, COORDINATION, ["leases"]),
  rule(["create"], COORDINATION, ["leases"]),
  rule(["get", "update"], COORDINATION, ["leases"], ["choreo-node-lifecycle", "kube-scheduler"]),
  rule(["create"], AUTHENTICATION, ["tokenreviews"]),
  rule(["create"], AUTHORIZATION, ["subjectaccessreviews"]),
];

/** The replication actor (user system:kube-controller-manager): every workload controller, disruption, HPA, GC, RBAC aggregation, service accounts. */
const CONTROLLER_MANAGER_RULES = [
  rule(EVENTS, CORE, ["events"]),
  rule(READ_WRITE, CORE, ["pods", "replicationcontrollers"]),
  rule(["update", "patch"], CORE, ["replicationcontrollers/status", "replicationcontrollers/finalizers"]),
  rule(["get", "update", "patch"], CORE, ["replicationcontrollers/scale"]),
  rule(READ, CORE, ["nodes", "namespaces"]),
  rule(["create", ...READ, "update", "patch"], CORE, ["serviceaccounts"]),
  rule(READ_WRITE, APPS, APPS_KINDS),
  rule(["update", "patch"], APPS, [...APPS_KINDS.map((k) => `${k}/status`), ...APPS_KINDS.map((k) => `${k}/finalizers`)]),
  rule(["get", "update", "patch"], APPS, ["deployments/scale", "replicasets/scale"]),
  rule(READ_WRITE, BATCH, BATCH_KINDS),
  rule(["update", "patch"], BATCH, [...BATCH_KINDS.map((k) => `${k}/status`), ...BATCH_KINDS.map((k) => `${k}/finalizers`)]),
  rule(READ, POLICY, ["poddisruptionbudgets"]),
  rule(["update", "patch"], POLICY, ["poddisruptionbudgets/status"]),
  rule(READ, AUTOSCALING, ["horizontalpodautoscalers"]),
  rule(["update", "patch"], AUTOSCALING, ["horizontalpodautoscalers/status"]),
  rule(["get", "list"], METRICS, ["pods"]),
  // The aggregation controller writes rules it does not hold itself: escalate, as Kubernetes' clusterrole-aggregation-controller.
  rule([...READ, "update", "patch", "escalate"], RBAC_GROUP, ["clusterroles"]),
  rule(["get", "create", "update"], COORDINATION, ["leases"]),
  rule(["create"], AUTHENTICATION, ["tokenreviews"]),
  rule(["create"], AUTHORIZATION, ["subjectaccessreviews"]),
];

/** The endpoints actor (user system:choreo-endpoints): the Endpoints of every Service from its pods. */
const ENDPOINTS_RULES = [
  rule(EVENTS, CORE, ["events"]),
  rule(READ, CORE, ["services", "pods"]),
  rule(READ_WRITE, CORE, ["endpoints"]),
  rule(["get", "create", "update"], COORDINATION, ["leases"]),
];

/**
 * A node agent (group system:nodes): its node and lease, the services it proxies, its pods' tokens. Its pods, their
 * status, and the Secrets, ConfigMaps, PVCs and ServiceAccounts they use are the node authorizer's
 * to allow, one pod's node at a time (auth/node): as Kubernetes, no role grants them to nodes.
 */
const NODE_RULES = [
  rule(EVENTS, CORE, ["events"]),
  rule([...READ, "create", "update", "patch", "delete"], CORE, ["nodes"]),
  rule(["update", "patch"], CORE, ["nodes/status"]),
  rule(READ, CORE, ["services", "endpoints"]),
  // A token only for its own pods: TokenRequest's NodeRestriction (registry/serviceaccounts/tokenrequest.ts).
  rule(["create"], CORE, ["serviceaccounts/token"]),
  rule(["get", "create", "update", "patch", "delete"], COORDINATION, ["leases"]),
  rule(["create"], AUTHENTICATION, ["tokenreviews"]),
  rule(["create"], AUTHORIZATION, ["subjectaccessreviews", "localsubjectaccessreviews"]),
];

/**
 * A hollow-nodes process (group system:hollow-nodes, besides system:nodes): many simulated
 * nodes behind one identity, which the node authorizer cannot narrow to one node — so what a
 * node's pods use is granted here whole (hollow pods run nothing).
 */
const HOLLOW_NODES_RULES = [
  rule([...READ, "delete"], CORE, ["pods"]),
  rule(["update", "patch"], CORE, ["pods/status"]),
  rule(["create"], CORE, ["pods/eviction"]),
  rule(["get"], CORE, ["configmaps", "secrets", "serviceaccounts", "persistentvolumeclaims"]),
];

/** The default ClusterRoles, in Kubernetes' names. */
export function bootstrapClusterRoles(): ClusterRole[] {
  return [
    clusterRole("cluster-admin", [rule(["*"], "*", ["*"]), urls(["*"], ["*"])]),
    clusterRole("admin", [], { aggregateFrom: "admin" }),
    clusterRole("edit", [], { aggregateFrom: "edit", labels: { [AGGREGATE_TO("admin")]: "true" } }),
    clusterRole("view", [], { aggregateFrom: "view", labels: { [AGGREGATE_TO("edit")]: "true" } }),
    clusterRole("system:aggregate-to-admin", ADMIN_RULES, { labels: { [AGGREGATE_TO("admin")]: "true" } }),
    clusterRole("system:aggregate-to-edit", EDIT_RULES, { labels: { [AGGREGATE_TO("edit")]: "true" } }),
    clusterRole("system:aggregate-to-view", VIEW_RULES, { labels: { [AGGREGATE_TO("view")]: "true" } }),
    clusterRole("system:discovery", [urls(["get"], DISCOVERY_URLS)]),
    clusterRole("system:public-info-viewer", [urls(["get"], PUBLIC_URLS)]),
    clusterRole("system:monitoring", [urls(["get"], ["/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/readyz", "/readyz/*"])]),
    clusterRole("system:basic-user", [
      rule(["create"], AUTHORIZATION, ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
      rule(["create"], AUTHENTICATION, ["selfsubjectreviews"]),
    ]),
    clusterRole("system:kube-scheduler", SCHEDULER_RULES),
    clusterRole("system:kube-controller-manager", CONTROLLER_MANAGER_RULES),
    clusterRole("system:choreo-endpoints", ENDPOINTS_RULES),
    clusterRole("system:node", NODE_RULES),
    clusterRole("system:choreo-hollow-nodes", HOLLOW_NODES_RULES),
    // Kubernetes' system:node-bootstrapper (CSRs: kubelet TLS bootstrap), and choreo's exchange for the node's bus credential (`choreo join`).
    clusterRole("system:node-bootstrapper", [
      rule(["create", "get", "list", "watch"], "certificates.k8s.io", ["certificatesigningrequests"]),
      urls(["post"], ["/choreo/v1/nodecredential"]),
    ]),
  ];
}

/** The default ClusterRoleBindings. */
export function bootstrapClusterRoleBindings(): ClusterRoleBinding[] {
  const authenticated = subject("Group", "system:authenticated");
  return [
    binding("cluster-admin", "cluster-admin", [subject("Group", "system:masters")]),
    binding("system:discovery", "system:discovery", [authenticated]),
    binding("system:basic-user", "system:basic-user", [authenticated]),
    binding("system:public-info-viewer", "system:public-info-viewer", [authenticated, subject("Group", "system:unauthenticated")]),
    binding("system:monitoring", "system:monitoring", [subject("Group", "system:monitoring")]),
    binding("system:kube-scheduler", "system:kube-scheduler", [subject("User", "system:kube-scheduler")]),
    binding("system:kube-controller-manager", "system:kube-controller-manager", [subject("User", "system:kube-controller-manager")]),
    binding("system:choreo-endpoints", "system:choreo-endpoints", [subject("User", "system:choreo-endpoints")]),
    binding("system:node", "system:node", [subject("Group", "system:nodes")]),
    binding("system:choreo-hollow-nodes", "system:choreo-hollow-nodes", [subject("Group", "system:hollow-nodes")]),
    // kubeadm binds its default node token's group (kubeadm:kubelet-bootstrap); here every bootstrap token.
    binding("system:node-bootstrapper", "system:node-bootstrapper", [subject("Group", "system:bootstrappers")]),
  ];
}
