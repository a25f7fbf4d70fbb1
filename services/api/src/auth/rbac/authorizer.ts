// Kubernetes' RBAC authorizer (plugin/pkg/auth/authorizer/rbac/rbac.go) over
// a synchronous RbacSource: ClusterRoleBindings first, then the
// RoleBindings of the request's namespace; the first rule that allows wins.
// Bindings are indexed by subject key (a user name — ServiceAccount subjects
// by their `system:serviceaccount:<ns>:<name>` — or a group), so a request
// looks at the bindings naming its user or one of its groups only.
import type { Attributes, Authorizer, Decision, UserInfo } from "../types.js";
import { describeSubject, ruleAllows, serviceAccountUsername } from "./rules.js";
import { RBAC_GROUP, type PolicyRule, type RbacSource, type RoleBinding, type RoleRef } from "./types.js";

/** One binding as seen from one of its subjects. */
interface Entry {
  binding: RoleBinding;
  /** The binding's position in the source (Kubernetes visits bindings in list order). */
  order: number;
  /** Which of its subjects the index key came from. */
  subject: number;
}

/** Bindings by subject key: `u:<user name>`, `g:<group>`. */
type SubjectIndex = Map<string, Entry[]>;

/** Called for each rule that applies to the user, with where it comes from; false stops the visit. */
export type RuleVisitor = (rule: PolicyRule, source: BindingRef) => boolean;

/** A binding that applies to the user, to describe in a reason. */
export interface BindingRef {
  clusterScoped: boolean;
  binding: RoleBinding;
  subject: number;
}

/** `ClusterRoleBinding "admins" of ClusterRole "cluster-admin" to Group "system:masters"`, as rbac.go's describers. */
export function describeBinding(ref: BindingRef): string {
  const b = ref.binding;
  const ns = b.metadata?.namespace ?? "";
  const name = ref.clusterScoped ? (b.metadata?.name ?? "") : `${b.metadata?.name ?? ""}/${ns}`;
  const kind = ref.clusterScoped ? "ClusterRoleBinding" : "RoleBinding";
  const subject = describeSubject(b.subjects[ref.subject], ref.clusterScoped ? "" : ns);
  return `${kind} ${JSON.stringify(name)} of ${b.roleRef?.kind ?? ""} ${JSON.stringify(b.roleRef?.name ?? "")} to ${subject}`;
}

/** Go's utilerrors.NewAggregate(errs).Error(): one message, or `[a, b]` (duplicates once). */
export function aggregate(errors: string[]): string {
  const unique = [...new Set(errors)];
  return unique.length === 1 ? unique[0] : `[${unique.join(", ")}]`;
}

export class RbacAuthorizer implements Authorizer {
  private indexedVersion = Number.NaN;
  private clusterIndex: SubjectIndex = new Map();
  private readonly namespaceIndexes = new Map<string, SubjectIndex>();

  constructor(private readonly source: RbacSource) {}

  authorize(a: Attributes): Decision {
    let allowedBy: BindingRef | undefined;
    const errors: string[] = [];
    this.visitRulesFor(
      a.user,
      a.namespace,
      (rule, source) => {
        if (!ruleAllows(a, rule)) return true;
        allowedBy = source;
        return false;
      },
      errors,
    );
    if (allowedBy) return { allowed: true, reason: `RBAC: allowed by ${describeBinding(allowedBy)}` };
    return { allowed: false, reason: errors.length ? `RBAC: ${aggregate(errors)}` : "" };
  }

  /**
   * The rules of every binding naming `user`: cluster-wide first, then those
   * of `namespace` (none when ""). A role that cannot be found is an error
   * pushed on `errors` (as `clusterrole.rbac.authorization.k8s.io "x" not
   * found`), its binding skipped.
   */
  visitRulesFor(user: UserInfo, namespace: string, visit: RuleVisitor, errors: string[]): void {
    this.refresh();
    for (const ref of candidates(this.clusterIndex, user, true)) {
      const rules = this.roleRefRules(ref.binding.roleRef, "", errors);
      for (const rule of rules) if (!visit(rule, ref)) return;
    }
    if (!namespace) return;
    for (const ref of candidates(this.namespaceIndex(namespace), user, false)) {
      const rules = this.roleRefRules(ref.binding.roleRef, namespace, errors);
      for (const rule of rules) if (!visit(rule, ref)) return;
    }
  }

  /** Every rule `user` holds in `namespace` (cluster-wide ones included), and the resolution errors. */
  rulesFor(user: UserInfo, namespace: string): { rules: PolicyRule[]; errors: string[] } {
    const rules: PolicyRule[] = [];
    const errors: string[] = [];
    this.visitRulesFor(user, namespace, (r) => (rules.push(r), true), errors);
    return { rules, errors };
  }

  /**
   * The rules a roleRef stands for (rule.go GetRoleReferenceRules): a Role of
   * `namespace`, or a ClusterRole (whose rules then apply where the binding
   * does). Throws-free: errors are pushed and no rules returned.
   */
  roleRefRules(ref: RoleRef | undefined, namespace: string, errors: string[]): PolicyRule[] {
    const kind = ref?.kind ?? "";
    const name = ref?.name ?? "";
    if (kind === "Role") {
      const role = this.source.getRole(namespace, name);
      if (role) return role.rules;
      errors.push(`role.${RBAC_GROUP} ${JSON.stringify(name)} not found`);
      return [];
    }
    if (kind === "ClusterRole") {
      const role = this.source.getClusterRole(name);
      if (role) return role.rules;
      errors.push(`clusterrole.${RBAC_GROUP} ${JSON.stringify(name)} not found`);
      return [];
    }
    errors.push(`unsupported role reference kind: ${JSON.stringify(kind)}`);
    return [];
  }

  /** Drops the indexes when the source's bindings changed. */
  private refresh(): void {
    const v = this.source.version();
    if (v === this.indexedVersion) return;
    this.indexedVersion = v;
    this.clusterIndex = buildIndex(this.source.clusterRoleBindings(), "");
    this.namespaceIndexes.clear();
  }

  private namespaceIndex(namespace: string): SubjectIndex {
    let idx = this.namespaceIndexes.get(namespace);
    if (!idx) {
      idx = buildIndex(this.source.roleBindings(namespace), namespace);
      this.namespaceIndexes.set(namespace, idx);
    }
    return idx;
  }
}

function buildIndex(bindings: Iterable<RoleBinding>, bindingNamespace: string): SubjectIndex {
  const idx: SubjectIndex = new Map();
  let order = 0;
  for (const binding of bindings) {
    const seen = new Set<string>();
    binding.subjects.forEach((s, subject) => {
      const key = subjectKey(s.kind, s.name, s.namespace || bindingNamespace);
      // The first subject naming a key describes the binding, as appliesTo's first match.
      if (key === undefined || seen.has(key)) return;
      seen.add(key);
      let list = idx.get(key);
      if (!list) idx.set(key, (list = []));
      list.push({ binding, order, subject });
    });
    order++;
  }
  return idx;
}

/** The index key of a subject, as appliesToUser matches it; undefined: matches nobody. */
function subjectKey(kind: string, name: string, namespace: string): string | undefined {
  switch (kind) {
    case "User":
      return `u:${name}`;
    case "Group":
      return `g:${name}`;
    case "ServiceAccount":
      return namespace ? `u:${serviceAccountUsername(namespace, name)}` : undefined;
    default:
      return undefined;
  }
}

/** The bindings naming `user` or one of its groups, in source order, each once (its first matching subject). */
function candidates(idx: SubjectIndex, user: UserInfo, clusterScoped: boolean): BindingRef[] {
  const byUser = idx.get(`u:${user.name}`);
  let found: Entry[] = byUser ? byUser.slice() : [];
  for (const g of user.groups) {
    const byGroup = idx.get(`g:${g}`);
    if (byGroup) found = found.length ? found.concat(byGroup) : byGroup.slice();
  }
  if (found.length === 0) return [];
  if (found.length > 1) found.sort((x, y) => x.order - y.order || x.subject - y.subject);
  const out: BindingRef[] = [];
  let last = -1;
  for (const e of found) {
    if (e.order === last) continue;
    last = e.order;
    out.push({ clusterScoped, binding: e.binding, subject: e.subject });
  }
  return out;
}
