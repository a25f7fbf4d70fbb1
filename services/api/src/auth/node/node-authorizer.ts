import type { Attributes, Authorizer, Decision } from "../types.js";

/** The prefix of a node's user name (Kubernetes' `system:node:<name>`). */
export const NODE_USER_PREFIX = "system:node:";
/** The group every node's user is in. */
export const NODES_GROUP = "system:nodes";
/** Where nodes keep their heartbeat Leases. */
const NODE_LEASE_NAMESPACE = "kube-node-lease";
const WRITES = new Set(["create", "update", "patch", "delete", "deletecollection"]);

/** The node a user is the agent of (`system:node:<name>` in `system:nodes`), else undefined. */
export function nodeOfUser(a: Pick<Attributes, "user">): string | undefined {
  const { name, groups } = a.user;
  if (!name.startsWith(NODE_USER_PREFIX) || !groups.includes(NODES_GROUP)) return undefined;
  return name.slice(NODE_USER_PREFIX.length) || undefined;
}

/**
 * The part of Kubernetes' Node authorizer and NodeRestriction that the
 * request's attributes alone decide, before RBAC: a node's user may write
 * only its own Node (and its status) and its own Lease in kube-node-lease —
 * another node's is an explicit deny (no role can grant it). Anything else
 * it leaves to RBAC (no opinion). Not yet here: reads limited to the pods
 * bound to the node and the Secrets, ConfigMaps, PVCs and ServiceAccounts
 * they reference, and pod writes limited to its own pods (those need the
 * pod graph).
 */
export class NodeAuthorizer implements Authorizer {
  authorize(a: Attributes): Decision {
    const node = nodeOfUser(a);
    if (node === undefined || !a.resourceRequest || !WRITES.has(a.verb)) return { allowed: false, reason: "" };
    if (a.apiGroup === "" && a.resource === "nodes" && a.name && a.name !== node) {
      return { allowed: false, denied: true, reason: `node "${node}" may not modify node "${a.name}"` };
    }
    if (a.apiGroup === "coordination.k8s.io" && a.resource === "leases" && a.namespace === NODE_LEASE_NAMESPACE && a.name && a.name !== node) {
      return { allowed: false, denied: true, reason: `node "${node}" may not modify the lease of node "${a.name}"` };
    }
    return { allowed: false, reason: "" };
  }
}
