// Access and identity reviews (`kubectl auth can-i`, `kubectl auth whoami`, TokenReview): see README.md.
export { isReviewPath, reviewAttributes, reviewRoute, serveReviews, type ReviewRoute } from "./door.js";
export { localSubjectAccessReview, selfSubjectAccessReview, selfSubjectRulesReview, subjectAccessReview } from "./access.js";
export { selfSubjectReview, tokenReview } from "./identity.js";
export { rbacRules } from "./rbac-rules.js";
export { REVIEW_GROUPS, reviewAggregatedGroup, reviewGroupEntry, reviewResourceList } from "./discovery.js";
export type { NonResourceRule, ResourceRule, ReviewContext, RulesOf, RulesResolver, TokenReviewer } from "./types.js";
