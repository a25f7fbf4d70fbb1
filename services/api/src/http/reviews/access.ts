// authorization.k8s.io/v1 access reviews, as Kubernetes'
// pkg/registry/authorization/*: SelfSubjectAccessReview (may the caller…),
// SubjectAccessReview (may this user…), LocalSubjectAccessReview (…in this
// namespace) and SelfSubjectRulesReview (what may the caller do here). Never
// stored: each answers the body it was given with `status` filled.
import { badRequest } from "@choreo/kit";
import { Errors } from "../../registry/shared/validation.js";
import { nonResourceAttributes } from "../../auth/attributes.js";
import { type Attributes, type Authorizer, type Decision, type UserInfo } from "../../auth/types.js";
import { checkKind, extraAt, invalidReview, objectAt, rec, stringAt, stringsAt } from "./json.js";
import type { Json, RulesOf, RulesResolver } from "./types.js";

export const AUTHORIZATION = "authorization.k8s.io";
const API_VERSION = `${AUTHORIZATION}/v1`;

/** The attributes of `spec.resourceAttributes` or `spec.nonResourceAttributes` (exactly one was checked present). */
function attributesOf(user: UserInfo, spec: Json): Attributes {
  const ra = objectAt(spec, "resourceAttributes", "spec.resourceAttributes");
  if (ra) {
    const at = (k: string) => stringAt(ra, k, `spec.resourceAttributes.${k}`);
    // fieldSelector and labelSelector may only narrow a request: the authorizers here do not read them, so they are not passed on.
    return {
      user,
      verb: at("verb"),
      resourceRequest: true,
      apiGroup: at("group"),
      // An empty version is every version (util.matchAllVersionIfEmpty).
      apiVersion: at("version") || "*",
      resource: at("resource"),
      subresource: at("subresource"),
      namespace: at("namespace"),
      name: at("name"),
      path: "",
    };
  }
  const nra = objectAt(spec, "nonResourceAttributes", "spec.nonResourceAttributes") ?? {};
  // The verb as given (a review's verbs are not HTTP methods to lower-case).
  return {
    ...nonResourceAttributes(user, "", stringAt(nra, "path", "spec.nonResourceAttributes.path")),
    verb: stringAt(nra, "verb", "spec.nonResourceAttributes.verb"),
  };
}

/** ValidateSelfSubjectAccessReviewSpec: exactly one of resourceAttributes and nonResourceAttributes. */
function checkAttributes(e: Errors, spec: Json): void {
  const ra = objectAt(spec, "resourceAttributes", "spec.resourceAttributes");
  const nra = objectAt(spec, "nonResourceAttributes", "spec.nonResourceAttributes");
  if (ra && nra) e.invalid("spec.nonResourceAttributes", nra, "cannot be specified in combination with resourceAttributes");
  if (!ra && !nra) e.invalid("spec.resourceAttributes", null, "exactly one of nonResourceAttributes or resourceAttributes must be specified");
}

/** Metadata must be empty (managedFields aside; a LocalSubjectAccessReview's namespace too), as Go's DeepEqual with an empty ObjectMeta. */
function checkEmptyMeta(e: Errors, meta: Json, allowed: string[], why: string): void {
  const set = Object.entries(meta).filter(([k, v]) => !allowed.includes(k) && !isZero(v));
  if (set.length) e.invalid("metadata", Object.fromEntries(set), why);
}

/** Go's zero value: protobuf bodies carry every non-pointer field (`generation: 0`). */
function isZero(v: unknown): boolean {
  if (v === null || v === undefined || v === "" || v === 0 || v === false) return true;
  return typeof v === "object" && Object.keys(v).length === 0;
}

/** The authorizer's decision as SubjectAccessReviewStatus (allowed always written; denied, reason, evaluationError when set). */
function decide(authorizer: Authorizer, a: Attributes): Json {
  let d: Decision;
  try {
    d = authorizer.authorize(a);
  } catch (err) {
    return { allowed: false, evaluationError: (err as Error).message };
  }
  return { allowed: d.allowed, ...(d.denied && !d.allowed ? { denied: true } : {}), ...(d.reason ? { reason: d.reason } : {}) };
}

/** The review as sent (its own fields: others are dropped, as decoding into Go's struct does), with the status filled. */
function answer(body: Json, kind: string, status: Json): Json {
  return { kind, apiVersion: API_VERSION, metadata: rec(body["metadata"]), spec: rec(body["spec"]), status };
}

/** POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews: may the caller do this? */
export function selfSubjectAccessReview(user: UserInfo, authorizer: Authorizer, body: Json): Json {
  const kind = "SelfSubjectAccessReview";
  checkKind(body, API_VERSION, kind);
  const spec = objectAt(body, "spec", "spec") ?? {};
  const e = new Errors();
  checkAttributes(e, spec);
  checkEmptyMeta(e, objectAt(body, "metadata", "metadata") ?? {}, ["managedFields", "creationTimestamp"], "must be empty");
  if (e.causes.length) throw invalidReview(kind, AUTHORIZATION, e.causes);
  return answer(body, kind, decide(authorizer, attributesOf(user, spec)));
}

/** The user a SubjectAccessReviewSpec asks about (user, groups, uid, extra), and its checks. */
function subjectOf(e: Errors, spec: Json): UserInfo {
  const name = stringAt(spec, "user", "spec.user");
  const groups = stringsAt(spec, "groups", "spec.groups");
  checkAttributes(e, spec);
  if (name === "" && groups.length === 0) e.invalid("spec.user", name, "at least one of user or group must be specified");
  return { name, groups, uid: stringAt(spec, "uid", "spec.uid"), extra: extraAt(spec, "extra", "spec.extra") };
}

/** POST /apis/authorization.k8s.io/v1/subjectaccessreviews: may this user do this? (The caller's own right to ask is the gateway's check.) */
export function subjectAccessReview(authorizer: Authorizer, body: Json): Json {
  const kind = "SubjectAccessReview";
  checkKind(body, API_VERSION, kind);
  const spec = objectAt(body, "spec", "spec") ?? {};
  const e = new Errors();
  const subject = subjectOf(e, spec);
  checkEmptyMeta(e, objectAt(body, "metadata", "metadata") ?? {}, ["managedFields", "creationTimestamp"], "must be empty");
  if (e.causes.length) throw invalidReview(kind, AUTHORIZATION, e.causes);
  return answer(body, kind, decide(authorizer, attributesOf(subject, spec)));
}

/** POST /apis/authorization.k8s.io/v1/namespaces/NS/localsubjectaccessreviews: a SubjectAccessReview held to one namespace. */
export function localSubjectAccessReview(authorizer: Authorizer, namespace: string, body: Json): Json {
  const kind = "LocalSubjectAccessReview";
  checkKind(body, API_VERSION, kind);
  const meta = { ...(objectAt(body, "metadata", "metadata") ?? {}) };
  // As the apiserver's create handler: an empty namespace takes the path's, another one is refused.
  const given = stringAt(meta, "namespace", "metadata.namespace");
  if (given !== "" && given !== namespace) throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  meta["namespace"] = namespace;
  const spec = objectAt(body, "spec", "spec") ?? {};
  const e = new Errors();
  const subject = subjectOf(e, spec);
  checkEmptyMeta(e, meta, ["managedFields", "creationTimestamp", "namespace"], "must be empty except for namespace");
  const ra = objectAt(spec, "resourceAttributes", "spec.resourceAttributes");
  if (ra && stringAt(ra, "namespace", "spec.resourceAttributes.namespace") !== namespace)
    e.invalid("spec.resourceAttributes.namespace", stringAt(ra, "namespace", ""), "must match metadata.namespace");
  const nra = objectAt(spec, "nonResourceAttributes", "spec.nonResourceAttributes");
  if (nra) e.invalid("spec.nonResourceAttributes", nra, "disallowed on this kind of request");
  if (e.causes.length) throw invalidReview(kind, AUTHORIZATION, e.causes);
  return { ...answer(body, kind, decide(authorizer, attributesOf(subject, spec))), metadata: meta };
}

/** Go's JSON of a ResourceRule / NonResourceRule: verbs always, the other lists when not empty. */
function ruleJson(r: Record<string, string[]>): Json {
  return Object.fromEntries(Object.entries(r).filter(([k, v]) => k === "verbs" || v.length > 0));
}

/** POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews: what may the caller do in spec.namespace? */
export async function selfSubjectRulesReview(user: UserInfo, rules: RulesResolver | undefined, body: Json): Promise<Json> {
  const kind = "SelfSubjectRulesReview";
  checkKind(body, API_VERSION, kind);
  const namespace = stringAt(objectAt(body, "spec", "spec") ?? {}, "namespace", "spec.namespace");
  if (namespace === "") throw badRequest("no namespace on request");
  const found: RulesOf[] = [];
  // The apiserver's union of rule resolvers is RBAC's (and the node authorizer's, which lists nothing): its
  // privileged-group authorizer allows system:masters but resolves no rules, so they see cluster-admin's through its binding.
  if (rules) {
    try {
      found.push(await rules.rulesFor(user, namespace));
    } catch (err) {
      found.push({ resourceRules: [], nonResourceRules: [], incomplete: true, evaluationError: (err as Error).message });
    }
  } else found.push({ resourceRules: [], nonResourceRules: [], incomplete: true, evaluationError: "no rules resolver is configured" });
  const errors = found.map((f) => f.evaluationError ?? "").filter((m) => m !== "");
  return {
    kind,
    apiVersion: API_VERSION,
    metadata: {},
    spec: {},
    status: {
      resourceRules: found.flatMap((f) => f.resourceRules.map((r) => ruleJson({ ...r }))),
      nonResourceRules: found.flatMap((f) => f.nonResourceRules.map((r) => ruleJson({ ...r }))),
      incomplete: found.some((f) => f.incomplete),
      ...(errors.length ? { evaluationError: errors.join(", ") } : {}),
    },
  };
}
