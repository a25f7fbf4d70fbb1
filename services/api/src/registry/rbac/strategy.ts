// rbac.authorization.k8s.io/v1: Role, ClusterRole, RoleBinding,
// ClusterRoleBinding — Kubernetes' defaults (pkg/apis/rbac/v1 defaults:
// roleRef.apiGroup and a subject's apiGroup filled) and validation
// (pkg/apis/rbac/validation): path-segment names, policy rules, the
// aggregation rule's selectors, roleRef and subjects, roleRef immutable.
import {
  RoleRef,
  type ClusterRole,
  type ClusterRoleBinding,
  type PolicyRule,
  type Role,
  type RoleBinding,
  type Subject,
} from "@choreo/kit/gen/choreo/rbac/v1/rbac";
import { fieldError } from "@choreo/kit";
import { validateDns1123Subdomain } from "@choreo/kit/apimachinery";
import type { Strategy } from "../generic/strategy.js";
import { Errors, validatePathSegmentName } from "../shared/validation.js";
import { validateLabelSelector } from "../workloads/replicaset.js";

/** A Required error with Kubernetes' detail ("Required value: <why>"). */
function required(e: Errors, field: string, why: string): void {
  e.causes.push(fieldError(field, "FieldValueRequired", `Required value: ${why}`));
}

/** The API group of the RBAC kinds (and of User and Group subjects). */
export const RBAC_GROUP = "rbac.authorization.k8s.io";

/** Kubernetes' ValidatePolicyRule. */
export function validatePolicyRule(e: Errors, rule: PolicyRule, namespaced: boolean, path: string): void {
  if (rule.verbs.length === 0) required(e, `${path}.verbs`, "verbs must contain at least one value");
  if (rule.nonResourceUrls.length > 0) {
    if (namespaced) e.invalid(`${path}.nonResourceURLs`, rule.nonResourceUrls, "namespaced rules cannot apply to non-resource URLs");
    if (rule.apiGroups.length > 0 || rule.resources.length > 0 || rule.resourceNames.length > 0)
      e.invalid(`${path}.nonResourceURLs`, rule.nonResourceUrls, "rules cannot apply to both regular resources and non-resource URLs");
    return;
  }
  if (rule.apiGroups.length === 0) required(e, `${path}.apiGroups`, "resource rules must supply at least one api group");
  if (rule.resources.length === 0) required(e, `${path}.resources`, "resource rules must supply at least one resource");
}

/** Kubernetes' ValidateRoleBindingSubject (`namespaced`: a RoleBinding's, whose ServiceAccounts default to its namespace). */
export function validateSubject(e: Errors, s: Subject, namespaced: boolean, path: string): void {
  e.required(`${path}.name`, s.name);
  switch (s.kind) {
    case "ServiceAccount":
      if (s.name) e.messages(`${path}.name`, s.name, validateDns1123Subdomain(s.name));
      if (s.apiGroup !== "") e.notSupported(`${path}.apiGroup`, s.apiGroup, [""]);
      if (!namespaced) e.required(`${path}.namespace`, s.namespace);
      break;
    case "User":
    case "Group":
      if (s.apiGroup !== RBAC_GROUP) e.notSupported(`${path}.apiGroup`, s.apiGroup, [RBAC_GROUP]);
      break;
    default:
      e.notSupported(`${path}.kind`, s.kind, ["ServiceAccount", "User", "Group"]);
  }
}

/** SetDefaults_Subject: an unset apiGroup is the kind's. */
function defaultSubjects(subjects: Subject[]): void {
  for (const s of subjects) if (s.apiGroup === "" && (s.kind === "User" || s.kind === "Group")) s.apiGroup = RBAC_GROUP;
}

type Binding = RoleBinding | ClusterRoleBinding;

/** SetDefaults_RoleBinding / ClusterRoleBinding: roleRef.apiGroup is RBAC's; subjects'. */
function defaultBinding(b: Binding): void {
  b.roleRef ??= RoleRef.fromPartial({});
  if (b.roleRef.apiGroup === "") b.roleRef.apiGroup = RBAC_GROUP;
  defaultSubjects(b.subjects);
}

/** ValidateRoleBinding / ValidateClusterRoleBinding, and on update "cannot change roleRef". */
function validateBinding(b: Binding, old: Binding | undefined, namespaced: boolean): Errors {
  const e = new Errors();
  const ref = b.roleRef ?? RoleRef.fromPartial({});
  if (ref.apiGroup !== RBAC_GROUP) e.notSupported("roleRef.apiGroup", ref.apiGroup, [RBAC_GROUP]);
  const kinds = namespaced ? ["Role", "ClusterRole"] : ["ClusterRole"];
  if (!kinds.includes(ref.kind)) e.notSupported("roleRef.kind", ref.kind, kinds);
  if (!ref.name) e.required("roleRef.name", ref.name);
  else e.messages("roleRef.name", ref.name, validatePathSegmentName(ref.name));
  b.subjects.forEach((s, i) => validateSubject(e, s, namespaced, `subjects[${i}]`));
  if (old) {
    const was = old.roleRef ?? RoleRef.fromPartial({});
    if (was.apiGroup !== ref.apiGroup || was.kind !== ref.kind || was.name !== ref.name)
      e.invalid("roleRef", { apiGroup: ref.apiGroup, kind: ref.kind, name: ref.name }, "cannot change roleRef");
  }
  return e;
}

/** Role: namespaced rules, no non-resource URLs. */
export const roleStrategy: Strategy<Role> = {
  nameRule: "path",
  validate(role) {
    const e = new Errors();
    role.rules.forEach((r, i) => validatePolicyRule(e, r, true, `rules[${i}]`));
    return e.causes;
  },
};

/** ClusterRole: rules (non-resource URLs allowed) and an optional aggregation rule. */
export const clusterRoleStrategy: Strategy<ClusterRole> = {
  nameRule: "path",
  validate(role) {
    const e = new Errors();
    role.rules.forEach((r, i) => validatePolicyRule(e, r, false, `rules[${i}]`));
    const agg = role.aggregationRule;
    if (agg) {
      if (agg.clusterRoleSelectors.length === 0)
        required(e, "aggregationRule.clusterRoleSelectors", "at least one clusterRoleSelector required if aggregationRule is non-nil");
      agg.clusterRoleSelectors.forEach((s, i) => validateLabelSelector(e, s, `aggregationRule.clusterRoleSelectors[${i}]`));
    }
    return e.causes;
  },
};

/** RoleBinding: a Role of its namespace or a ClusterRole, granted to its subjects in its namespace. */
export const roleBindingStrategy: Strategy<RoleBinding> = {
  nameRule: "path",
  prepareCreate: defaultBinding,
  prepareUpdate: defaultBinding,
  validate: (b, old) => validateBinding(b, old, true).causes,
};

/** ClusterRoleBinding: a ClusterRole granted cluster-wide. */
export const clusterRoleBindingStrategy: Strategy<ClusterRoleBinding> = {
  nameRule: "path",
  prepareCreate: defaultBinding,
  prepareUpdate: defaultBinding,
  validate: (b, old) => validateBinding(b, old, false).causes,
};
