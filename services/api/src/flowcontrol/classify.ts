// Which priority level a request goes to, and which flow within it: Kubernetes'
// default FlowSchemas (flowcontrol.apiserver.k8s.io, 1.29+) for the users
// choreo has, in their order of precedence.
import { NODES_GROUP } from "@choreo/kit/secrets";
import { MASTERS, type Attributes, type UserInfo } from "../auth/types.js";

/** The priority levels, as Kubernetes' default PriorityLevelConfigurations. */
export type PriorityLevel = "exempt" | "node-high" | "system" | "leader-election" | "workload-high" | "workload-low" | "global-default";

/**
 * Each limited level's nominal concurrency shares (Kubernetes' defaults): its
 * guaranteed seats are its share of the server's concurrency limit.
 */
export const SHARES: Readonly<Record<Exclude<PriorityLevel, "exempt">, number>> = {
  "node-high": 40,
  system: 30,
  "leader-election": 10,
  "workload-high": 40,
  "workload-low": 100,
  "global-default": 20,
};

/** Where a request goes: its level, the FlowSchema that put it there, and its flow (requests of one flow are served in order; flows take turns). */
export interface Classification {
  level: PriorityLevel;
  schema: string;
  flow: string;
}

/** The control plane's own users (the default RBAC policy's): Kubernetes' kube-controller-manager and kube-scheduler FlowSchemas. */
const CONTROLLERS: ReadonlySet<string> = new Set(["system:kube-controller-manager", "system:kube-scheduler", "system:choreo-endpoints"]);
const SERVICE_ACCOUNTS = "system:serviceaccounts";

/**
 * The level and flow of a request by `user` asking `attrs` (its verb and
 * resource). Without a user (a door without authentication) the request is
 * the global default's, one flow per verb.
 */
export function classify(user: UserInfo | undefined, attrs: Pick<Attributes, "verb" | "resource" | "namespace" | "apiGroup">): Classification {
  if (!user) return { level: "global-default", schema: "global-default", flow: `:${attrs.verb}` };
  const groups = user.groups;
  // exempt: system:masters may do anything, unqueued (as the apiserver's `exempt` FlowSchema).
  if (groups.includes(MASTERS)) return { level: "exempt", schema: "exempt", flow: user.name };
  if (groups.includes(NODES_GROUP)) {
    // system-node-high: a node's heartbeat (its Lease and Node) must never wait behind pod traffic, or a busy api makes nodes NotReady.
    if (attrs.resource === "leases" || attrs.resource === "nodes") return { level: "node-high", schema: "system-node-high", flow: user.name };
    return { level: "system", schema: "system-nodes", flow: user.name };
  }
  if (CONTROLLERS.has(user.name)) {
    // system-leader-election: the controllers' own Leases.
    if (attrs.resource === "leases") return { level: "leader-election", schema: "system-leader-election", flow: user.name };
    return { level: "workload-high", schema: user.name.slice("system:".length), flow: attrs.namespace };
  }
  if (groups.includes(SERVICE_ACCOUNTS)) {
    if (user.name.startsWith("system:serviceaccount:kube-system:"))
      return { level: "workload-high", schema: "kube-system-service-accounts", flow: attrs.namespace };
    return { level: "workload-low", schema: "service-accounts", flow: attrs.namespace };
  }
  return { level: "global-default", schema: "global-default", flow: user.name };
}
