import { parseFieldSelector } from "@choreo/kit/apimachinery";
import type { Attributes, Authorizer, Decision } from "../types.js";
import type { NodeGraph } from "./graph.js";
import type { ReferenceKind } from "./pod-references.js";

/** The prefix of a node's user name (Kubernetes' `system:node:<name>`). */
export const NODE_USER_PREFIX = "system:node:";
/** The group every node's user is in. */
export const NODES_GROUP = "system:nodes";
/** Where nodes keep their heartbeat Leases. */
const NODE_LEASE_NAMESPACE = "kube-node-lease";
const WRITES = new Set(["create", "update", "patch", "delete", "deletecollection"]);

const NO_OPINION: Decision = { allowed: false, reason: "" };
const ALLOW: Decision = { allowed: true, reason: "" };
const deny = (reason: string): Decision => ({ allowed: false, denied: true, reason });
const noOpinion = (reason: string): Decision => ({ allowed: false, reason });

/** The node a user is the agent of (`system:node:<name>` in `system:nodes`), else undefined. */
export function nodeOfUser(a: Pick<Attributes, "user">): string | undefined {
  const { name, groups } = a.user;
  if (!name.startsWith(NODE_USER_PREFIX) || !groups.includes(NODES_GROUP)) return undefined;
  return name.slice(NODE_USER_PREFIX.length) || undefined;
}

/** Whether a field selector asks for `spec.nodeName=<node>` (among other terms); a selector that does not parse does not. */
function selectsNode(fieldSelector: string | undefined, node: string): boolean {
  try {
    return parseFieldSelector(fieldSelector ?? "").requirements.some((r) => r.field === "spec.nodeName" && r.operator === "=" && r.value === node);
  } catch {
    return false;
  }
}

/**
 * Kubernetes' Node authorizer with NodeRestriction's pod checks, for users
 * `system:node:<name>` in `system:nodes`, before RBAC:
 *
 * - another node's Node, `nodes/status` or `kube-node-lease` Lease: denied
 *   (ending the chain: no role can grant it);
 * - Secrets, ConfigMaps, PersistentVolumeClaims and ServiceAccounts (and a
 *   ServiceAccount's `token`): `get` allowed when a pod bound to the node
 *   uses the object (the graph), else no opinion, and RBAC's `system:node`
 *   role grants none of them; `list`/`watch` of Secrets and ConfigMaps denied;
 * - pods: `get`, `pods/status` update/patch, delete and `pods/eviction` only
 *   of a pod bound to the node, `list`/`watch` only with the field selector
 *   `spec.nodeName=<node>`; creating a pod denied (a node creates only
 *   mirror pods, and choreo has no static pods), other pod writes denied.
 *
 * Other users (a hollow-nodes process is no single node), non-resource
 * requests and other resources: no opinion. Without a graph, nothing a
 * pod relates is known: reads and pod writes get no opinion (RBAC decides).
 */
export class NodeAuthorizer implements Authorizer {
  constructor(private readonly graph?: NodeGraph) {}

  authorize(a: Attributes): Decision {
    const node = nodeOfUser(a);
    if (node === undefined || !a.resourceRequest) return NO_OPINION;
    if (a.apiGroup === "coordination.k8s.io" && a.resource === "leases") {
      if (WRITES.has(a.verb) && a.namespace === NODE_LEASE_NAMESPACE && a.name && a.name !== node) {
        return deny(`node "${node}" may not modify the lease of node "${a.name}"`);
      }
      return NO_OPINION;
    }
    if (a.apiGroup !== "") return NO_OPINION;
    switch (a.resource) {
      case "nodes":
        if (WRITES.has(a.verb) && a.name && a.name !== node) return deny(`node "${node}" may not modify node "${a.name}"`);
        return NO_OPINION;
      case "secrets":
      case "configmaps":
        if (a.verb === "list" || a.verb === "watch") return deny(`node "${node}" may get ${a.resource} its pods use one by one, never ${a.verb} them`);
        return this.getRelated(node, a.resource, a);
      case "persistentvolumeclaims":
        return this.getRelated(node, a.resource, a);
      case "serviceaccounts":
        if (a.subresource === "token") {
          if (a.verb !== "create" || !a.name) return noOpinion("can only create tokens for individual service accounts");
          return this.related(node, "serviceaccounts", a);
        }
        return this.getRelated(node, a.resource, a);
      case "pods":
        return this.authorizePod(node, a);
      default:
        return NO_OPINION;
    }
  }

  /** `get` of one object a pod of `node` uses; anything else: no opinion. */
  private getRelated(node: string, kind: ReferenceKind, a: Attributes): Decision {
    if (a.verb !== "get") return noOpinion("can only get individual resources of this type");
    if (a.subresource) return noOpinion("cannot get subresource");
    return this.related(node, kind, a);
  }

  private related(node: string, kind: ReferenceKind, a: Attributes): Decision {
    if (!this.graph) return NO_OPINION;
    if (!a.name || !a.namespace) return noOpinion("No Object name found");
    if (this.graph.uses(node, kind, a.namespace, a.name)) return ALLOW;
    return noOpinion(`no relationship found between node '${node}' and this object`);
  }

  private authorizePod(node: string, a: Attributes): Decision {
    if (!this.graph) return NO_OPINION;
    const bound = a.name && a.namespace ? this.graph.podNode(a.namespace, a.name) : undefined;
    const mine = bound === node;
    switch (a.subresource) {
      case "":
        switch (a.verb) {
          case "get":
            return mine ? ALLOW : deny(`node "${node}" can only read pods with spec.nodeName set to itself`);
          case "list":
          case "watch":
            return selectsNode(a.fieldSelector, node) ? ALLOW : deny(`node "${node}" can only list/watch pods with spec.nodeName field selector`);
          case "delete":
            return mine ? ALLOW : deny(`node "${node}" can only delete pods with spec.nodeName set to itself`);
          case "create":
            return deny(`node "${node}" can only create mirror pods, and choreo has no static pods`);
          case "update":
          case "patch":
          case "deletecollection":
            return deny(`node "${node}" may not ${a.verb} pods, only their status`);
          default:
            return NO_OPINION;
        }
      case "status":
        if (a.verb === "get") return mine ? ALLOW : deny(`node "${node}" can only read pods with spec.nodeName set to itself`);
        if (a.verb === "update" || a.verb === "patch") {
          return mine ? ALLOW : deny(`node "${node}" can only update pod status for pods with spec.nodeName set to itself`);
        }
        return NO_OPINION;
      case "eviction":
        if (a.verb !== "create") return NO_OPINION;
        return mine ? ALLOW : deny(`node "${node}" can only evict pods with spec.nodeName set to itself`);
      default:
        return NO_OPINION;
    }
  }
}
