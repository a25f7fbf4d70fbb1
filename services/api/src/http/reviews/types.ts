// What the review handlers are given: the caller, an authorizer (auth/types.ts),
// a token authenticator for TokenReview and a rules resolver for
// SelfSubjectRulesReview, each injected by whoever builds the gateway.
import type { Authorizer, UserInfo } from "../../auth/types.js";

/** A Kubernetes JSON object. */
export type Json = Record<string, unknown>;

/** Answers TokenReview: the user a bearer token proves for one of `audiences`, undefined when it proves none. May throw (→ status.error). */
export interface TokenReviewer {
  authenticateToken(token: string, audiences?: readonly string[]): UserInfo | undefined | Promise<UserInfo | undefined>;
}

/** One resource rule as SelfSubjectRulesReview lists it (authorization.k8s.io/v1 ResourceRule). */
export interface ResourceRule {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  resourceNames: string[];
}

/** One non-resource rule (authorization.k8s.io/v1 NonResourceRule). */
export interface NonResourceRule {
  verbs: string[];
  nonResourceURLs: string[];
}

/** What a rules resolver knows of a user in a namespace, as Kubernetes' authorizer.RuleResolver.RulesFor. */
export interface RulesOf {
  resourceRules: ResourceRule[];
  nonResourceRules: NonResourceRule[];
  /** Some authorizer could not list its rules: the lists may miss some. */
  incomplete: boolean;
  /** Why the lists may be incomplete (a binding to a missing role…). */
  evaluationError?: string;
}

/** Lists a user's rules in a namespace (the RBAC authorizer's, services/api/src/auth/rbac). */
export interface RulesResolver {
  rulesFor(user: UserInfo, namespace: string): RulesOf | Promise<RulesOf>;
}

/** Everything the review door needs for one request. */
export interface ReviewContext {
  /** The authenticated caller. */
  user: UserInfo;
  authorizer: Authorizer;
  /** SelfSubjectRulesReview's source; without one the answer is empty and `incomplete`. */
  rules?: RulesResolver;
  /** TokenReview's authenticator; without one every token is unauthenticated. */
  tokens?: TokenReviewer;
  /** The api's own audiences: TokenReview's default when `spec.audiences` is empty. */
  apiAudiences?: readonly string[];
}
