// Plain RBAC objects and an in-memory RbacSource for the unit tests and the benchmark.
import type { UserInfo } from "../types.js";
import type { ClusterRole, ClusterRoleBinding, PolicyRule, RbacSource, Role, RoleBinding, Subject } from "./types.js";
import { RBAC_GROUP } from "./types.js";

export const policyRule = (r: Partial<PolicyRule>): PolicyRule => ({ verbs: [], apiGroups: [], resources: [], resourceNames: [], nonResourceUrls: [], ...r });

export const user = (name: string, ...groups: string[]): UserInfo => ({ name, uid: "", groups, extra: {} });
export const userSubject = (name: string): Subject => ({ kind: "User", apiGroup: RBAC_GROUP, name, namespace: "" });
export const groupSubject = (name: string): Subject => ({ kind: "Group", apiGroup: RBAC_GROUP, name, namespace: "" });
export const saSubject = (name: string, namespace = ""): Subject => ({ kind: "ServiceAccount", apiGroup: "", name, namespace });

export const role = (namespace: string, name: string, ...rules: PolicyRule[]): Role => ({ metadata: { namespace, name }, rules });
export const clusterRole = (name: string, ...rules: PolicyRule[]): ClusterRole => ({ metadata: { name, namespace: "" }, rules });
export const roleBinding = (namespace: string, name: string, roleKind: "Role" | "ClusterRole", roleName: string, ...subjects: Subject[]): RoleBinding => ({
  metadata: { namespace, name },
  subjects,
  roleRef: { apiGroup: RBAC_GROUP, kind: roleKind, name: roleName },
});
export const clusterRoleBinding = (name: string, roleName: string, ...subjects: Subject[]): ClusterRoleBinding => ({
  metadata: { name, namespace: "" },
  subjects,
  roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name: roleName },
});

/** An RbacSource over arrays; call `changed()` after editing bindings. */
export class StaticSource implements RbacSource {
  private v = 0;
  constructor(
    public roles: Role[] = [],
    public clusterRoles: ClusterRole[] = [],
    public bindings: RoleBinding[] = [],
    public clusterBindings: ClusterRoleBinding[] = [],
  ) {}

  getRole(namespace: string, name: string): Role | undefined {
    return this.roles.find((r) => r.metadata?.namespace === namespace && r.metadata?.name === name);
  }
  getClusterRole(name: string): ClusterRole | undefined {
    return this.clusterRoles.find((r) => r.metadata?.name === name);
  }
  roleBindings(namespace: string): Iterable<RoleBinding> {
    return this.bindings.filter((b) => b.metadata?.namespace === namespace);
  }
  clusterRoleBindings(): Iterable<ClusterRoleBinding> {
    return this.clusterBindings;
  }
  version(): number {
    return this.v;
  }
  changed(): void {
    this.v++;
  }
}
