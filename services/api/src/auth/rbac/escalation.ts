// Kubernetes' escalation prevention (pkg/registry/rbac/validation:
// policy_comparator.go Covers, rule.go ConfirmNoEscalation, and the
// policybased storages of roles, clusterroles, rolebindings and
// clusterrolebindings): one may only grant what one holds.
import { ApiError, failure, Reason } from "@choreo/kit";
import { MASTERS, type Attributes, type Authorizer, type UserInfo } from "../types.js";
import { aggregate, type RbacAuthorizer } from "./authorizer.js";
import { ALL, trimStars } from "./rules.js";
import { RBAC_GROUP, type ClusterRole, type PolicyRule, type RoleBinding } from "./types.js";

const rule = (r: Partial<PolicyRule>): PolicyRule => ({ verbs: [], apiGroups: [], resources: [], resourceNames: [], nonResourceUrls: [], ...r });

/** Every permission: what an aggregationRule may gather (clusterrole policybased fullAuthority). */
export const FULL_AUTHORITY: PolicyRule[] = [rule({ verbs: [ALL], apiGroups: [ALL], resources: [ALL] }), rule({ verbs: [ALL], nonResourceUrls: [ALL] })];

/** One rule per group × resource × verb (× name), and per non-resource URL × verb. */
export function breakdownRule(r: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const group of r.apiGroups) {
    for (const resource of r.resources) {
      for (const verb of r.verbs) {
        if (r.resourceNames.length > 0) {
          for (const name of r.resourceNames) out.push(rule({ apiGroups: [group], resources: [resource], verbs: [verb], resourceNames: [name] }));
        } else {
          out.push(rule({ apiGroups: [group], resources: [resource], verbs: [verb] }));
        }
      }
    }
  }
  for (const url of r.nonResourceUrls) for (const verb of r.verbs) out.push(rule({ nonResourceUrls: [url], verbs: [verb] }));
  return out;
}

const hasAll = (set: string[], wanted: string[]): boolean => wanted.every((w) => set.includes(w));

function resourcesCoverAll(set: string[], wanted: string[]): boolean {
  if (set.includes(ALL) || hasAll(set, wanted)) return true;
  for (const path of wanted) {
    if (set.includes(path)) continue;
    const slash = path.indexOf("/");
    if (slash < 0) return false;
    if (!set.includes(`*/${path.slice(slash + 1)}`)) return false;
  }
  return true;
}

function nonResourceUrlCovers(owner: string, sub: string): boolean {
  return owner === sub || (owner.endsWith("*") && sub.startsWith(trimStars(owner)));
}

/** Whether one owner rule covers one broken-down rule (policy_comparator.go ruleCovers). */
export function ruleCovers(owner: PolicyRule, sub: PolicyRule): boolean {
  const verbs = owner.verbs.includes(ALL) || hasAll(owner.verbs, sub.verbs);
  const groups = owner.apiGroups.includes(ALL) || hasAll(owner.apiGroups, sub.apiGroups);
  const resources = resourcesCoverAll(owner.resources, sub.resources);
  const urls = sub.nonResourceUrls.every((u) => owner.nonResourceUrls.some((o) => nonResourceUrlCovers(o, u)));
  const names =
    sub.resourceNames.length === 0 ? owner.resourceNames.length === 0 : owner.resourceNames.length === 0 || hasAll(owner.resourceNames, sub.resourceNames);
  return verbs && groups && resources && names && urls;
}

/** Whether `owner` rules cover all of `servant`'s; the uncovered broken-down rules if not. */
export function covers(owner: PolicyRule[], servant: PolicyRule[]): { covered: boolean; missing: PolicyRule[] } {
  const missing: PolicyRule[] = [];
  for (const s of servant) for (const sub of breakdownRule(s)) if (!owner.some((o) => ruleCovers(o, sub))) missing.push(sub);
  return { covered: missing.length === 0, missing };
}

/** Merges the verbs of rules on the same one group, one resource and at most one name (rule compaction). */
export function compactRules(rules: PolicyRule[]): PolicyRule[] {
  const out: PolicyRule[] = [];
  const simple = new Map<string, PolicyRule>();
  for (const r of rules) {
    const isSimple = r.resourceNames.length <= 1 && r.nonResourceUrls.length === 0 && r.apiGroups.length === 1 && r.resources.length === 1;
    if (!isSimple) {
      out.push(r);
      continue;
    }
    const key = JSON.stringify([r.apiGroups[0], r.resources[0], r.resourceNames.length > 0, r.resourceNames[0] ?? ""]);
    const existing = simple.get(key);
    if (existing) existing.verbs.push(...r.verbs);
    else simple.set(key, { ...r, verbs: [...r.verbs] });
  }
  return out.concat([...simple.values()]);
}

/** Go's %q of a []string: `["a" "b"]`. */
const goQuoted = (xs: string[]): string => `[${xs.map((x) => JSON.stringify(x)).join(" ")}]`;

/** `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}` as rbacv1helpers.CompactString. */
export function compactString(r: PolicyRule): string {
  const parts: string[] = [];
  if (r.apiGroups.length) parts.push(`APIGroups:${goQuoted(r.apiGroups)}`);
  if (r.resources.length) parts.push(`Resources:${goQuoted(r.resources)}`);
  if (r.nonResourceUrls.length) parts.push(`NonResourceURLs:${goQuoted(r.nonResourceUrls)}`);
  if (r.resourceNames.length) parts.push(`ResourceNames:${goQuoted(r.resourceNames)}`);
  if (r.verbs.length) parts.push(`Verbs:${goQuoted(r.verbs)}`);
  return `{${parts.join(", ")}}`;
}

/**
 * ConfirmNoEscalation: undefined when `user` holds every rule of `rules` in
 * `namespace` ("" for cluster-wide), else the message naming what is missing.
 */
export function confirmNoEscalation(user: UserInfo, namespace: string, rules: PolicyRule[], rbac: RbacAuthorizer): string | undefined {
  const owned = rbac.rulesFor(user, namespace);
  const { covered, missing } = covers(owned.rules, rules);
  if (covered) return undefined;
  const lines = [...new Set(compactRules(missing).map(compactString))].sort();
  let msg = `user ${JSON.stringify(user.name)} (groups=${goQuoted(user.groups)}) is attempting to grant RBAC permissions not currently held:\n${lines.join("\n")}`;
  if (owned.errors.length) msg += `; resolution errors: [${aggregate(owned.errors)}]`;
  return msg;
}

/** A create or update of an RBAC object, as the registry sees it. */
export type EscalationRequest =
  | { resource: "roles" | "clusterroles"; namespace: string; name: string; role: ClusterRole }
  | { resource: "rolebindings" | "clusterrolebindings"; namespace: string; name: string; binding: RoleBinding };

function forbidden(resource: string, name: string, why: string): ApiError {
  const gr = `${resource}.${RBAC_GROUP}`;
  const message = name ? `${gr} ${JSON.stringify(name)} is forbidden: ${why}` : `${gr} is forbidden: ${why}`;
  return new ApiError(failure(403, Reason.Forbidden, message, { kind: resource, group: RBAC_GROUP, name }));
}

function allows(authorizer: Authorizer, user: UserInfo, verb: string, apiGroup: string, resource: string, namespace: string, name: string): boolean {
  const a: Attributes = { user, verb, resourceRequest: true, apiGroup, apiVersion: "*", resource, subresource: "", namespace, name, path: "" };
  return authorizer.authorize(a).allowed;
}

/**
 * Throws Kubernetes' 403 unless `user` may write this RBAC object:
 * `system:masters` may always; a Role or ClusterRole needs `escalate` on it
 * or every permission it grants (an aggregationRule: every permission at
 * all); a binding needs `bind` on the role it references (by name) or that
 * role's permissions in the binding's namespace. `authorizer` is the
 * api's whole chain (for escalate and bind); `rbac` resolves the rules the
 * user holds. A registry skips this for an update changing only
 * ownerReferences and finalizers (IsOnlyMutatingGCFields).
 */
export function checkEscalation(user: UserInfo, req: EscalationRequest, rbac: RbacAuthorizer, authorizer: Authorizer): void {
  if (user.groups.includes(MASTERS)) return;
  if ("role" in req) {
    if (allows(authorizer, user, "escalate", RBAC_GROUP, req.resource, req.namespace, req.name)) return;
    const why = confirmNoEscalation(user, req.namespace, req.role.rules, rbac);
    if (why) throw forbidden(req.resource, req.name, why);
    if (
      req.resource === "clusterroles" &&
      (req.role.aggregationRule?.clusterRoleSelectors.length ?? 0) > 0 &&
      confirmNoEscalation(user, "", FULL_AUTHORITY, rbac)
    ) {
      throw forbidden(req.resource, req.name, "must have cluster-admin privileges to use the aggregationRule");
    }
    return;
  }
  const ref = req.binding.roleRef;
  const refResource = ref?.kind === "ClusterRole" ? "clusterroles" : ref?.kind === "Role" ? "roles" : "";
  if (refResource && allows(authorizer, user, "bind", ref?.apiGroup ?? "", refResource, req.namespace, ref?.name ?? "")) return;
  const errors: string[] = [];
  const rules = rbac.roleRefRules(ref, req.namespace, errors);
  if (errors.length) throw forbidden(req.resource, req.name, errors[0]);
  const why = confirmNoEscalation(user, req.namespace, rules, rbac);
  if (why) throw forbidden(req.resource, req.name, why);
}
