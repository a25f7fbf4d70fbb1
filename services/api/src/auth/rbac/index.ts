// Kubernetes' RBAC for the api: the authorizer, its cache, rules reviews and
// escalation checks (README.md).
export { RbacAuthorizer, describeBinding, aggregate, type BindingRef, type RuleVisitor } from "./authorizer.js";
export { RbacCache, type RbacCacheOptions } from "./cache.js";
export { rulesReview, type RulesReview, type ResourceRule, type NonResourceRule } from "./rules-review.js";
export {
  checkEscalation,
  confirmNoEscalation,
  covers,
  compactRules,
  compactString,
  breakdownRule,
  FULL_AUTHORITY,
  type EscalationRequest,
} from "./escalation.js";
export { ruleAllows, appliesToUser, serviceAccountUsername } from "./rules.js";
export * from "./types.js";
