// The two review groups in discovery: authorization.k8s.io/v1 and
// authentication.k8s.io/v1, create-only resources with no kind in the kinds
// table (they are never stored), listed as the apiserver lists them.
import { AUTHORIZATION } from "./access.js";
import { AUTHENTICATION } from "./identity.js";

const VERSION = "v1";
const VERBS = ["create"];

interface Review {
  resource: string;
  singular: string;
  kind: string;
  namespaced: boolean;
}

/** The review resources of each group, in the apiserver's order. */
export const REVIEW_GROUPS: Record<string, Review[]> = {
  [AUTHENTICATION]: [
    { resource: "selfsubjectreviews", singular: "selfsubjectreview", kind: "SelfSubjectReview", namespaced: false },
    { resource: "tokenreviews", singular: "tokenreview", kind: "TokenReview", namespaced: false },
  ],
  [AUTHORIZATION]: [
    { resource: "localsubjectaccessreviews", singular: "localsubjectaccessreview", kind: "LocalSubjectAccessReview", namespaced: true },
    { resource: "selfsubjectaccessreviews", singular: "selfsubjectaccessreview", kind: "SelfSubjectAccessReview", namespaced: false },
    { resource: "selfsubjectrulesreviews", singular: "selfsubjectrulesreview", kind: "SelfSubjectRulesReview", namespaced: false },
    { resource: "subjectaccessreviews", singular: "subjectaccessreview", kind: "SubjectAccessReview", namespaced: false },
  ],
};

/** A group's entry in /apis (APIGroupList.groups[]) and the body of GET /apis/GROUP without its kind. */
export function reviewGroupEntry(group: string): Record<string, unknown> {
  const v = { groupVersion: `${group}/${VERSION}`, version: VERSION };
  return { name: group, versions: [v], preferredVersion: v };
}

/** GET /apis/GROUP/v1 */
export function reviewResourceList(group: string): Record<string, unknown> {
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: `${group}/${VERSION}`,
    resources: (REVIEW_GROUPS[group] ?? []).map((r) => ({ name: r.resource, singularName: r.singular, namespaced: r.namespaced, kind: r.kind, verbs: VERBS })),
  };
}

/** The group in the aggregated discovery of /apis (APIGroupDiscovery). */
export function reviewAggregatedGroup(group: string): Record<string, unknown> {
  const resources = (REVIEW_GROUPS[group] ?? []).map((r) => ({
    resource: r.resource,
    responseKind: { group, version: VERSION, kind: r.kind },
    scope: r.namespaced ? "Namespaced" : "Cluster",
    singularResource: r.singular,
    verbs: VERBS,
  }));
  return { metadata: { name: group, creationTimestamp: null }, versions: [{ version: VERSION, resources, freshness: "Current" }] };
}
