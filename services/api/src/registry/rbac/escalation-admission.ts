// RBAC's escalation prevention in the registry, as Kubernetes' rbac storage
// does it: a user may write a Role or ClusterRole only holding every
// permission in it (or `escalate`), and a binding only holding the
// referenced role's permissions (or `bind` on it). The api's authorizer is
// made after the registry (it reads the roles through it), so the check is
// handed in once both exist; until then, and for requests without a user
// (the api's own bootstrap, the controllers' writes through the store),
// nothing is checked beyond the door's authorization.
import type { AnyObject } from "@choreo/kit";
import type { ClusterRole, RoleBinding } from "@choreo/kit/gen/choreo/rbac/v1/rbac";
import type { UserInfo } from "../../auth/types.js";
import type { EscalationRequest } from "../../auth/rbac/escalation.js";
import { requestUserInfo } from "../generic/admission-context.js";
import type { Strategies, Strategy } from "../generic/strategy.js";

/** Where the api puts its escalation check once the authorizer exists. */
export interface EscalationGuard {
  check?: (user: UserInfo, req: EscalationRequest) => void;
}

type Meta = { metadata?: { name?: string; namespace?: string; ownerReferences?: unknown; finalizers?: unknown } };

/** True when an update changes only ownerReferences or finalizers (the garbage collector's writes): not checked, as Kubernetes. */
function onlyGcFields(obj: unknown, old: unknown): boolean {
  if (!old) return false;
  const strip = (o: unknown): string => {
    const m = (o as Meta).metadata ?? {};
    const { ownerReferences: _o, finalizers: _f, ...rest } = m as Record<string, unknown>;
    return JSON.stringify({
      ...(o as Record<string, unknown>),
      metadata: { ...rest, resourceVersion: undefined, generation: undefined, managedFields: undefined },
    });
  };
  return strip(obj) === strip(old);
}

function guarded<T extends AnyObject>(s: Strategy<T>, guard: EscalationGuard, req: (o: T) => EscalationRequest): Strategy<T> {
  return {
    ...s,
    async admit(store, obj, old) {
      await s.admit?.(store, obj, old);
      const user = requestUserInfo(store);
      if (!guard.check || !user || onlyGcFields(obj, old)) return;
      guard.check(user, req(obj));
    },
  };
}

/** The RBAC kinds' strategies with the escalation check of `guard` on create and update. */
export function withEscalationChecks(strategies: Strategies, guard: EscalationGuard): Strategies {
  const id = (o: Meta) => ({ namespace: o.metadata?.namespace ?? "", name: o.metadata?.name ?? "" });
  return {
    ...strategies,
    role: guarded(strategies.role as Strategy<ClusterRole>, guard, (o) => ({ resource: "roles", ...id(o), role: o })) as Strategy,
    clusterRole: guarded(strategies.clusterRole as Strategy<ClusterRole>, guard, (o) => ({
      resource: "clusterroles",
      ...id(o),
      namespace: "",
      role: o,
    })) as Strategy,
    roleBinding: guarded(strategies.roleBinding as Strategy<RoleBinding>, guard, (o) => ({
      resource: "rolebindings",
      ...id(o),
      binding: o,
    })) as Strategy,
    clusterRoleBinding: guarded(strategies.clusterRoleBinding as Strategy<RoleBinding>, guard, (o) => ({
      resource: "clusterrolebindings",
      ...id(o),
      namespace: "",
      binding: o,
    })) as Strategy,
  };
}
