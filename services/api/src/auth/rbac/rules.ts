// Rule and subject matching exactly as Kubernetes' RBAC authorizer
// (k8s.io/kubernetes pkg/apis/rbac/v1/evaluation_helpers.go and
// pkg/registry/rbac/validation/rule.go appliesToUser). Pure functions.
import type { Attributes, UserInfo } from "../types.js";
import type { PolicyRule, Subject } from "./types.js";

export const ALL = "*";

/** `*` or the verb itself. */
export function verbMatches(rule: PolicyRule, verb: string): boolean {
  for (const v of rule.verbs) if (v === ALL || v === verb) return true;
  return false;
}

export function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  for (const g of rule.apiGroups) if (g === ALL || g === group) return true;
  return false;
}

/**
 * `*`; the combined `resource` or `resource/subresource`; `*∕subresource`
 * for any resource's subresource. (Kubernetes has no `resource/*`: a rule
 * naming `pods/*` grants no subresource of pods.)
 */
export function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  for (const r of rule.resources) {
    if (r === ALL || r === combined) return true;
    if (subresource && r.length === subresource.length + 2 && r.startsWith("*/") && r.endsWith(subresource)) return true;
  }
  return false;
}

/** No names: any (named or not); names: only a request naming one of them. */
export function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  if (rule.resourceNames.length === 0) return true;
  return rule.resourceNames.includes(name);
}

/** `*`; the path itself; `/apis/*` as a prefix. */
export function nonResourceUrlMatches(rule: PolicyRule, path: string): boolean {
  for (const u of rule.nonResourceUrls) {
    if (u === ALL || u === path) return true;
    if (u.endsWith("*") && path.startsWith(trimStars(u))) return true;
  }
  return false;
}

/** Go's strings.TrimRight(s, "*"). */
export function trimStars(s: string): string {
  let end = s.length;
  while (end > 0 && s[end - 1] === "*") end--;
  return s.slice(0, end);
}

/** Whether `rule` allows the request (rbac.go RuleAllows). */
export function ruleAllows(a: Attributes, rule: PolicyRule): boolean {
  if (a.resourceRequest) {
    const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    return (
      verbMatches(rule, a.verb) && apiGroupMatches(rule, a.apiGroup) && resourceMatches(rule, combined, a.subresource) && resourceNameMatches(rule, a.name)
    );
  }
  return verbMatches(rule, a.verb) && nonResourceUrlMatches(rule, a.path);
}

export const SA_PREFIX = "system:serviceaccount:";

/** `system:serviceaccount:<ns>:<name>`. */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `${SA_PREFIX}${namespace}:${name}`;
}

/**
 * Whether `subject` names `user`. `bindingNamespace`: a RoleBinding's
 * namespace, the default of its ServiceAccount subjects ("" for a
 * ClusterRoleBinding, whose ServiceAccount subjects must name theirs).
 */
export function appliesToUser(user: UserInfo, subject: Subject, bindingNamespace: string): boolean {
  switch (subject.kind) {
    case "User":
      return user.name === subject.name;
    case "Group":
      return user.groups.includes(subject.name);
    case "ServiceAccount": {
      const ns = subject.namespace || bindingNamespace;
      if (!ns) return false;
      return user.name === serviceAccountUsername(ns, subject.name);
    }
    default:
      return false;
  }
}

/** The first of `subjects` naming `user`, or -1. */
export function appliesTo(user: UserInfo, subjects: Subject[], bindingNamespace: string): number {
  for (let i = 0; i < subjects.length; i++) if (appliesToUser(user, subjects[i], bindingNamespace)) return i;
  return -1;
}

/** As Kubernetes describes a subject in a reason: `User "alice"`, `ServiceAccount "sa/ns"`. */
export function describeSubject(s: Subject, bindingNamespace: string): string {
  if (s.kind === "ServiceAccount") return `${s.kind} ${JSON.stringify(`${s.name}/${s.namespace || bindingNamespace}`)}`;
  return `${s.kind} ${JSON.stringify(s.name)}`;
}
