// The rules a user holds in a namespace, as SelfSubjectRulesReview's status
// (`kubectl auth can-i --list`): RBACAuthorizer.RulesFor in rbac.go. A rule
// with resources is a resource rule, one with nonResourceURLs a
// non-resource rule (a rule with both is both); RBAC never reports
// `incomplete`; a role it could not find is an `evaluationError`, the other
// rules still listed.
import type { UserInfo } from "../types.js";
import { aggregate, type RbacAuthorizer } from "./authorizer.js";

export interface ResourceRule {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  resourceNames: string[];
}

export interface NonResourceRule {
  verbs: string[];
  nonResourceUrls: string[];
}

/** SubjectRulesReviewStatus. */
export interface RulesReview {
  resourceRules: ResourceRule[];
  nonResourceRules: NonResourceRule[];
  incomplete: boolean;
  evaluationError: string;
}

export function rulesReview(rbac: RbacAuthorizer, user: UserInfo, namespace: string): RulesReview {
  const { rules, errors } = rbac.rulesFor(user, namespace);
  const review: RulesReview = { resourceRules: [], nonResourceRules: [], incomplete: false, evaluationError: "" };
  for (const r of rules) {
    if (r.resources.length > 0) {
      review.resourceRules.push({ verbs: [...r.verbs], apiGroups: [...r.apiGroups], resources: [...r.resources], resourceNames: [...r.resourceNames] });
    }
    if (r.nonResourceUrls.length > 0) review.nonResourceRules.push({ verbs: [...r.verbs], nonResourceUrls: [...r.nonResourceUrls] });
  }
  if (errors.length) review.evaluationError = aggregate(errors);
  return review;
}
