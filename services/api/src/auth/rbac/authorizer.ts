// Kubernetes' RBAC authorizer (plugin/pkg/auth/authorizer/rbac/rbac.go) over
// a synchronous RbacSource: ClusterRoleBindings first, then the
// RoleBindings of the request's namespace; the first rule that allows wins.
// Bindings are indexed by subject key (a user name — ServiceAccount subjects
// by their `system:serviceaccount:<ns>:<name>` — or a group), so a request
// looks at the bindings naming its user or one of its groups only.
import type { Attributes, Authorizer, Decision, UserInfo } from "../types.js";
import { describeSubject, ruleAllows, serviceAccountUsername } from "./rules.js";
import { RBAC_GROUP, type PolicyRule, type RbacSource, type RoleBinding, type RoleRef } from "./types.js";

/** A binding as seen from one of its subjects: an index entry, and what a reason describes. */
export interface BindingRef {
  clusterScoped: boolean;
  binding: RoleBinding;
  /** Which of its subjects the index key came from. */
  subject: number;
  /** The binding's position in the source (Kubernetes visits bindings in list order). */
  order: number;
}

/** Bindings by subject key: `u:<user name>`, `g:<group>`. */
type SubjectIndex = Map<string, BindingRef[]>;

/** Called for each rule that applies to the user, with where it comes from; false stops the visit. */
export type RuleVisitor = (rule: PolicyRule, source: BindingRef) => boolean;

const NONE: BindingRef[] = [];

/**
 * A decision kept for one key (decisionKey: the request without its object's
 * name): the same for every name when no rule the decision read names
 * objects (`resourceNames`), else one per name.
 */
type Kept = { decision: Decision; byName?: undefined } | { decision?: undefined; byName: Map<string, Decision> };

/** Keys kept at most (all dropped when passed: a new generation drops them anyway); names per key likewise. */
const MAX_DECISIONS = 16_384;
const MAX_NAMES = 1_024;

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
  private clusterVersion = Number.NaN;
  private clusterIndex: SubjectIndex = new Map();
  private readonly namespaceIndexes = new Map<string, { version: number; index: SubjectIndex }>();

  /** Decisions made while the source's generation was `decisionsGeneration`, by decisionKey. */
  private readonly decisions = new Map<string, Kept>();
  private decisionsGeneration = Number.NaN;

  constructor(private readonly source: RbacSource) {}

  /**
   * The decision for `a`. With a source that has a generation, decisions are
   * kept until it moves — any Role, ClusterRole or binding changed, so a
   * revoked permission stops allowing as soon as the source holds the change;
   * they depend on nothing else (the user's name and groups, the verb, the
   * resource, the namespace, the name or path: all in the key).
   */
  authorize(a: Attributes): Decision {
    const generation = this.source.generation?.();
    if (generation === undefined) return this.decide(a).decision;
    if (generation !== this.decisionsGeneration) {
      this.decisions.clear();
      this.decisionsGeneration = generation;
    }
    const key = decisionKey(a);
    const kept = this.decisions.get(key);
    if (kept?.decision) return kept.decision;
    const byNameKept = kept?.byName.get(a.name);
    if (byNameKept) return byNameKept;
    const { decision, byName } = this.decide(a);
    if (!byName) {
      if (this.decisions.size >= MAX_DECISIONS) this.decisions.clear();
      this.decisions.set(key, { decision });
      return decision;
    }
    let names = kept?.byName;
    if (!names) {
      if (this.decisions.size >= MAX_DECISIONS) this.decisions.clear();
      this.decisions.set(key, { byName: (names = new Map()) });
    }
    if (names.size >= MAX_NAMES) names.clear();
    names.set(a.name, decision);
    return decision;
  }

  /** The decision as RBAC makes it, and whether a rule it read names objects (then another name may decide otherwise). */
  private decide(a: Attributes): { decision: Decision; byName: boolean } {
    let allowedBy: BindingRef | undefined;
    let byName = false;
    const errors: string[] = [];
    this.visitRulesFor(
      a.user,
      a.namespace,
      (rule, source) => {
        if (rule.resourceNames.length > 0) byName = true;
        if (!ruleAllows(a, rule)) return true;
        allowedBy = source;
        return false;
      },
      errors,
    );
    // Frozen: a kept decision is handed to every later caller.
    const decision: Decision = allowedBy
      ? { allowed: true, reason: `RBAC: allowed by ${describeBinding(allowedBy)}` }
      : { allowed: false, reason: errors.length ? `RBAC: ${aggregate(errors)}` : "" };
    return { decision: Object.freeze(decision), byName: byName && a.resourceRequest };
  }

  /**
   * The rules of every binding naming `user`: cluster-wide first, then those
   * of `namespace` (none when ""). A role that cannot be found is an error
   * pushed on `errors` (as `clusterrole.rbac.authorization.k8s.io "x" not
   * found`), its binding skipped.
   */
  visitRulesFor(user: UserInfo, namespace: string, visit: RuleVisitor, errors: string[]): void {
    for (const ref of candidates(this.clusterBindingIndex(), user)) {
      const rules = this.roleRefRules(ref.binding.roleRef, "", errors);
      for (const rule of rules) if (!visit(rule, ref)) return;
    }
    if (!namespace) return;
    for (const ref of candidates(this.namespaceIndex(namespace), user)) {
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

  /** The ClusterRoleBindings' index, rebuilt when they changed. */
  private clusterBindingIndex(): SubjectIndex {
    const v = this.source.version("");
    if (v !== this.clusterVersion) {
      this.clusterVersion = v;
      this.clusterIndex = buildIndex(this.source.clusterRoleBindings(), "");
    }
    return this.clusterIndex;
  }

  /** A namespace's RoleBindings' index, built on first use and again when they changed. */
  private namespaceIndex(namespace: string): SubjectIndex {
    const v = this.source.version(namespace);
    const cached = this.namespaceIndexes.get(namespace);
    if (cached?.version === v) return cached.index;
    const index = buildIndex(this.source.roleBindings(namespace), namespace);
    this.namespaceIndexes.set(namespace, { version: v, index });
    return index;
  }
}

/** `<length>:<text>`: a key's parts cannot run into each other, whatever they hold. */
function part(s: string): string {
  return `${s.length}:${s}`;
}

/**
 * What an RBAC decision depends on besides the roles and bindings: the
 * user's name and groups, and the verb with the resource, subresource, API
 * group and namespace (a resource request) or the path (a non-resource one).
 * The object's name is left out (Kept holds decisions per name when it counts).
 */
function decisionKey(a: Attributes): string {
  const u = a.user;
  let k = `${part(u.name)}${u.groups.length};`;
  for (const g of u.groups) k += part(g);
  if (!a.resourceRequest) return `${k}N${part(a.verb)}${a.path}`;
  return `${k}R${part(a.verb)}${part(a.apiGroup)}${part(a.resource)}${part(a.subresource)}${a.namespace}`;
}

function buildIndex(bindings: Iterable<RoleBinding>, bindingNamespace: string): SubjectIndex {
  const idx: SubjectIndex = new Map();
  const clusterScoped = bindingNamespace === "";
  const keys: (string | undefined)[] = [];
  let order = 0;
  for (const binding of bindings) {
    const subjects = binding.subjects;
    keys.length = 0;
    for (let subject = 0; subject < subjects.length; subject++) {
      const s = subjects[subject];
      const key = subjectKey(s.kind, s.name, s.namespace || bindingNamespace);
      keys.push(key);
      // The first subject naming a key describes the binding, as appliesTo's first match.
      if (key === undefined || keys.indexOf(key) < subject) continue;
      const entry: BindingRef = { clusterScoped, binding, order, subject };
      const list = idx.get(key);
      if (list) list.push(entry);
      else idx.set(key, [entry]);
    }
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

/**
 * The bindings naming `user` or one of its groups, in source order, each
 * once (its first matching subject). Shares the index's array when only one
 * key matches: read-only.
 */
function candidates(idx: SubjectIndex, user: UserInfo): readonly BindingRef[] {
  let found = idx.get(`u:${user.name}`) ?? NONE;
  let merged = false;
  for (const g of user.groups) {
    const byGroup = idx.get(`g:${g}`);
    if (!byGroup) continue;
    if (found.length === 0) found = byGroup;
    else {
      found = found.concat(byGroup);
      merged = true;
    }
  }
  if (!merged) return found;
  found.sort((x, y) => x.order - y.order || x.subject - y.subject);
  return found.filter((e, i) => i === 0 || found[i - 1].order !== e.order);
}
