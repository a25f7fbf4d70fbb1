// The RBAC authorizer as SelfSubjectRulesReview's rules resolver
// (auth/rbac/rules-review.ts gives the rules; here only the field names
// of authorization/v1 and an empty error left out).
import type { RbacAuthorizer } from "../../auth/rbac/authorizer.js";
import { rulesReview } from "../../auth/rbac/rules-review.js";
import type { RulesResolver } from "./types.js";

/** A RulesResolver over the RBAC authorizer. */
export function rbacRules(rbac: RbacAuthorizer): RulesResolver {
  return {
    rulesFor(user, namespace) {
      const r = rulesReview(rbac, user, namespace);
      return {
        resourceRules: r.resourceRules,
        nonResourceRules: r.nonResourceRules.map((n) => ({ verbs: n.verbs, nonResourceURLs: n.nonResourceUrls })),
        incomplete: r.incomplete,
        ...(r.evaluationError ? { evaluationError: r.evaluationError } : {}),
      };
    },
  };
}
