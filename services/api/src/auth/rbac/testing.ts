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

/**
 * An RbacSource over arrays, looked up through maps; call `changed()` after
 * adding or removing roles or bindings, `rolesChanged()` after changing a
 * role's rules in place (the authorizer keeps decisions until either).
 */
export class StaticSource implements RbacSource {
  private v = 0;
  private counter = 0;
  private readonly scoped = new Map<string, number>();
  private mapped = -1;
  private roleMap = new Map<string, Role>();
  private clusterRoleMap = new Map<string, ClusterRole>();
  private bindingMap = new Map<string, RoleBinding[]>();
  private rolesMapped = -1;
  private ruleChanges = 0;

  constructor(
    public roles: Role[] = [],
    public clusterRoles: ClusterRole[] = [],
    public bindings: RoleBinding[] = [],
    public clusterBindings: ClusterRoleBinding[] = [],
  ) {}

  getRole(namespace: string, name: string): Role | undefined {
    return this.maps().roleMap.get(`${namespace}/${name}`);
  }
  getClusterRole(name: string): ClusterRole | undefined {
    return this.maps().clusterRoleMap.get(name);
  }
  roleBindings(namespace: string): Iterable<RoleBinding> {
    return this.maps().bindingMap.get(namespace) ?? [];
  }
  clusterRoleBindings(): Iterable<ClusterRoleBinding> {
    return this.clusterBindings;
  }
  /** All scopes' version is the last `changed()`'s, or the last `changed(scope)`'s if later. */
  version(scope: string): number {
    return Math.max(this.v, this.scoped.get(scope) ?? 0);
  }
  generation(): number {
    return this.counter + this.ruleChanges;
  }
  /** A role's rules changed in place: the generation moves, the bindings' versions stay. */
  rolesChanged(): void {
    this.ruleChanges++;
  }
  /** Bindings changed: of one scope ("" the ClusterRoleBindings, a namespace its RoleBindings), or all. */
  changed(scope?: string): void {
    this.counter++;
    if (scope === undefined) this.v = this.counter;
    else this.scoped.set(scope, this.counter);
  }

  private maps(): this {
    if (this.mapped === this.counter) return this;
    this.mapped = this.counter;
    const roleCount = this.roles.length * 1e6 + this.clusterRoles.length;
    if (roleCount !== this.rolesMapped) {
      this.rolesMapped = roleCount;
      this.roleMap = new Map(this.roles.map((r) => [`${r.metadata?.namespace}/${r.metadata?.name}`, r]));
      this.clusterRoleMap = new Map(this.clusterRoles.map((r) => [r.metadata?.name ?? "", r]));
    }
    this.bindingMap = new Map();
    for (const b of this.bindings) {
      const ns = b.metadata?.namespace ?? "";
      const list = this.bindingMap.get(ns) ?? [];
      list.push(b);
      this.bindingMap.set(ns, list);
    }
    return this;
  }
}
