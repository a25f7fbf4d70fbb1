// The review door: /apis/authorization.k8s.io/… and /apis/authentication.k8s.io/…
// — their discovery documents (GET) and the create-only reviews (POST, JSON,
// YAML or protobuf in; JSON or protobuf out, 201 as the apiserver).
import type { IncomingMessage, ServerResponse } from "node:http";
import { methodNotAllowed } from "@choreo/kit";
import type { Attributes, UserInfo } from "../../auth/types.js";
import { decodeBody, readBody } from "../body.js";
import { answerInProtobuf, wantsProtobuf } from "../protobuf.js";
import { sendJson } from "../respond.js";
import { pathNotFound } from "../routes.js";
import { AUTHORIZATION, localSubjectAccessReview, selfSubjectAccessReview, selfSubjectRulesReview, subjectAccessReview } from "./access.js";
import { REVIEW_GROUPS, reviewGroupEntry, reviewResourceList } from "./discovery.js";
import { AUTHENTICATION, selfSubjectReview, tokenReview } from "./identity.js";
import { rec } from "./json.js";
import type { Json, ReviewContext } from "./types.js";

/** What a path under the review groups addresses. */
export type ReviewRoute =
  { type: "group"; group: string } | { type: "resourceList"; group: string } | { type: "review"; group: string; resource: string; namespace: string };

const GROUPS = [AUTHORIZATION, AUTHENTICATION];

/** Whether a path is under one of the review groups (this door's). */
export function isReviewPath(pathname: string): boolean {
  return GROUPS.some((g) => pathname === `/apis/${g}` || pathname.startsWith(`/apis/${g}/`));
}

/** What a review-group path addresses; a 404 Status for paths the groups do not serve. */
export function reviewRoute(pathname: string): ReviewRoute {
  const seg = pathname.split("/").filter((s) => s !== "");
  const group = seg[1] ?? "";
  if (seg[0] !== "apis" || !GROUPS.includes(group)) throw pathNotFound();
  if (seg.length === 2) return { type: "group", group };
  if (seg[2] !== "v1") throw pathNotFound();
  if (seg.length === 3) return { type: "resourceList", group };
  const [, , , a, b, c, ...more] = seg;
  const served = REVIEW_GROUPS[group] ?? [];
  if (more.length === 0 && a === "namespaces" && b !== undefined && c !== undefined) {
    if (served.some((r) => r.resource === c && r.namespaced)) return { type: "review", group, resource: c, namespace: b };
  } else if (b === undefined && served.some((r) => r.resource === a && !r.namespaced)) return { type: "review", group, resource: a!, namespace: "" };
  throw pathNotFound();
}

/**
 * The authorization attributes of a request on this door (for the gateway's
 * check before serving): `create` of the review resource, or a GET of a
 * discovery path as a non-resource request. Undefined for a path not served.
 */
export function reviewAttributes(user: UserInfo, method: string, pathname: string): Attributes | undefined {
  let route: ReviewRoute;
  try {
    route = reviewRoute(pathname);
  } catch {
    return undefined;
  }
  const none = { apiGroup: "", apiVersion: "", resource: "", subresource: "", namespace: "", name: "", path: "" };
  if (route.type !== "review") return { ...none, user, verb: method.toLowerCase(), resourceRequest: false, path: pathname };
  const verb = method === "POST" ? "create" : method.toLowerCase();
  return { ...none, user, verb, resourceRequest: true, apiGroup: route.group, apiVersion: "v1", resource: route.resource, namespace: route.namespace };
}

async function review(route: Extract<ReviewRoute, { type: "review" }>, ctx: ReviewContext, body: Json): Promise<Json> {
  switch (route.resource) {
    case "selfsubjectaccessreviews":
      return selfSubjectAccessReview(ctx.user, ctx.authorizer, body);
    case "subjectaccessreviews":
      return subjectAccessReview(ctx.authorizer, body);
    case "localsubjectaccessreviews":
      return localSubjectAccessReview(ctx.authorizer, route.namespace, body);
    case "selfsubjectrulesreviews":
      return selfSubjectRulesReview(ctx.user, ctx.rules, body);
    case "selfsubjectreviews":
      return selfSubjectReview(ctx.user, body);
    case "tokenreviews":
      return tokenReview(ctx.tokens, ctx.apiAudiences ?? [], body);
    default:
      throw pathNotFound();
  }
}

/** Serves one request on a review-group path. The caller has authenticated and authorized it. */
export async function serveReviews(req: IncomingMessage, res: ServerResponse, url: URL, ctx: ReviewContext): Promise<void> {
  const route = reviewRoute(url.pathname);
  if (route.type !== "review") {
    if (req.method !== "GET") throw methodNotAllowed(`${req.method ?? ""} is not supported on ${url.pathname}`);
    if (route.type === "group") return sendJson(res, 200, { kind: "APIGroup", apiVersion: "v1", ...reviewGroupEntry(route.group) });
    return sendJson(res, 200, reviewResourceList(route.group));
  }
  if (req.method !== "POST") throw methodNotAllowed("the server does not allow this method on the requested resource");
  if (wantsProtobuf(req)) answerInProtobuf(res);
  const body = rec(decodeBody(req, await readBody(req)));
  sendJson(res, 201, withZeroTime(await review(route, ctx, body)));
}

/**
 * The answer's metadata with `creationTimestamp: null` when it has none: a
 * review is never stored, and Go writes its zero metav1.Time as null (what
 * `kubectl create -f review.yaml -o yaml` prints); protobuf leaves it out.
 */
function withZeroTime(answer: Json): Json {
  const meta = rec(answer["metadata"]);
  return meta["creationTimestamp"] ? answer : { ...answer, metadata: { ...meta, creationTimestamp: null } };
}
