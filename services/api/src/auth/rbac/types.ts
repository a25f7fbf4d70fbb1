// The parts of rbac.authorization.k8s.io/v1 objects the authorizer reads:
// structural, so that the generated messages (@choreo/kit/gen/choreo/rbac/v1)
// and plain test objects both satisfy them.

export interface PolicyRule {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  resourceNames: string[];
  /** `nonResourceURLs` in Kubernetes JSON. */
  nonResourceUrls: string[];
}

/** `User`, `Group` or `ServiceAccount` (namespace: the SA's; "" in a RoleBinding means the binding's). */
export interface Subject {
  kind: string;
  apiGroup: string;
  name: string;
  namespace: string;
}

export interface RoleRef {
  apiGroup: string;
  /** `Role` or `ClusterRole`. */
  kind: string;
  name: string;
}

export interface Metadata {
  name?: string;
  namespace?: string;
}

export interface Role {
  metadata?: Metadata | undefined;
  rules: PolicyRule[];
}

export interface ClusterRole extends Role {
  /** Present: the rules are gathered by the aggregation controller; creating one needs full authority. */
  aggregationRule?: { clusterRoleSelectors: unknown[] } | undefined;
}

export interface RoleBinding {
  metadata?: Metadata | undefined;
  subjects: Subject[];
  roleRef?: RoleRef | undefined;
}

export type ClusterRoleBinding = RoleBinding;

/**
 * What the authorizer reads, synchronously (an informer-fed cache).
 * `version(scope)` changes whenever the bindings of `scope` change ("": the
 * ClusterRoleBindings; a namespace: its RoleBindings): the authorizer keeps
 * that scope's subject index while it stays the same.
 */
export interface RbacSource {
  getRole(namespace: string, name: string): Role | undefined;
  getClusterRole(name: string): ClusterRole | undefined;
  roleBindings(namespace: string): Iterable<RoleBinding>;
  clusterRoleBindings(): Iterable<ClusterRoleBinding>;
  version(scope: string): number;
  /**
   * Moves whenever any Role, ClusterRole, RoleBinding or ClusterRoleBinding
   * changes (and on every relist). A source that has one lets the authorizer
   * keep its decisions while it stays the same; one without is asked afresh
   * for each decision.
   */
  generation?(): number;
}

/** A rule as it applies to the request's user, with the binding that grants it (for reasons). */
export interface GrantedRule {
  rule: PolicyRule;
  /** `ClusterRoleBinding "x" of ClusterRole "y" to User "alice"`. */
  source: string;
}

export const RBAC_GROUP = "rbac.authorization.k8s.io";
