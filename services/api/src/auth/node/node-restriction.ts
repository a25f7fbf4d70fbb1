// NodeRestriction's checks on a node's own Node (Kubernetes'
// plugin/pkg/admission/noderestriction admitNode): what the request's
// attributes cannot tell — the labels and taints it writes — checked in the
// registry's admission step against the stored Node. Another node's Node
// and the pod writes are the node authorizer's (node-authorizer.ts).
import { forbidden } from "@choreo/kit";
import type { Node } from "@choreo/kit/gen/choreo/core/v1/core";
import { requestUserInfo } from "../../registry/generic/admission-context.js";
import type { Strategies, Strategy } from "../../registry/generic/strategy.js";
import { nodeOfUser } from "./node-authorizer.js";

/** Labels only the cluster's administrators set (a node could steer workloads to itself with them). */
export const NODE_RESTRICTION_LABEL_DOMAIN = "node-restriction.kubernetes.io";

/** Whether `key`'s prefix is `node-restriction.kubernetes.io` or a subdomain of it. */
function restrictedLabel(key: string): boolean {
  const slash = key.indexOf("/");
  if (slash < 0) return false;
  const domain = key.slice(0, slash);
  return domain === NODE_RESTRICTION_LABEL_DOMAIN || domain.endsWith(`.${NODE_RESTRICTION_LABEL_DOMAIN}`);
}

/** Keys added, removed or changed between two label maps, sorted. */
function modifiedLabels(a: Record<string, string>, b: Record<string, string>): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].filter((k) => a[k] !== b[k]).sort();
}

/**
 * Why node `node`'s user may not write `obj` (a create, or an update of
 * `old`), or undefined: a node sets no `node-restriction.kubernetes.io/`
 * label (on create or update), and changes no taint of its existing Node.
 * Kubernetes' messages.
 */
export function nodeWriteRefusal(node: string, obj: Node, old?: Node): string | undefined {
  const labels = obj.metadata?.labels ?? {};
  if (!old) {
    const bad = modifiedLabels(labels, {}).filter(restrictedLabel);
    if (bad.length) return `node "${node}" is not allowed to set the following labels: ${bad.join(", ")}`;
    return undefined;
  }
  if (JSON.stringify(obj.spec?.taints ?? []) !== JSON.stringify(old.spec?.taints ?? [])) return `node "${node}" is not allowed to modify taints`;
  const bad = modifiedLabels(labels, old.metadata?.labels ?? {}).filter(restrictedLabel);
  if (bad.length) return `is not allowed to modify labels: ${bad.join(", ")}`;
  return undefined;
}

/**
 * `strategies` with NodeRestriction on the Node kind: a node's user
 * (`system:node:<name>` in `system:nodes`) creating or updating a Node is
 * refused with 403 for what `nodeWriteRefusal` names. Status updates are not
 * admitted (they change neither labels nor taints); other users, and
 * requests without a user (the api's own writes), are not checked.
 */
export function withNodeRestriction(strategies: Strategies): Strategies {
  const inner = strategies.node as Strategy<Node> | undefined;
  if (!inner) return strategies;
  const restricted: Strategy<Node> = {
    ...inner,
    async admit(store, obj, old) {
      await inner.admit?.(store, obj, old);
      const user = requestUserInfo(store);
      const node = user ? nodeOfUser({ user }) : undefined;
      if (node === undefined) return;
      const why = nodeWriteRefusal(node, obj, old);
      if (why) throw forbidden(`nodes "${obj.metadata?.name ?? ""}" is forbidden: ${why}`);
    },
  };
  return { ...strategies, node: restricted as Strategy };
}
