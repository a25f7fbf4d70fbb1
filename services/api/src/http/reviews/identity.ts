// authentication.k8s.io/v1: SelfSubjectReview (who am I: `kubectl auth
// whoami`) and TokenReview (whom does this token prove), as Kubernetes'
// pkg/registry/authentication. Never stored.
import { badRequest } from "@choreo/kit";
import type { UserInfo } from "../../auth/types.js";
import { checkKind, objectAt, rec, stringAt, stringsAt } from "./json.js";
import type { Json, TokenReviewer } from "./types.js";

export const AUTHENTICATION = "authentication.k8s.io";
const API_VERSION = `${AUTHENTICATION}/v1`;

/** authentication/v1 UserInfo as Go writes it (every field omitempty). */
export function userInfoJson(u: UserInfo): Json {
  return {
    ...(u.name ? { username: u.name } : {}),
    ...(u.uid ? { uid: u.uid } : {}),
    ...(u.groups.length ? { groups: [...u.groups] } : {}),
    ...(Object.keys(u.extra).length ? { extra: Object.fromEntries(Object.entries(u.extra).map(([k, v]) => [k, [...v]])) } : {}),
  };
}

/** POST /apis/authentication.k8s.io/v1/selfsubjectreviews: the caller's user, groups, uid and extra. */
export function selfSubjectReview(user: UserInfo, body: Json): Json {
  checkKind(body, API_VERSION, "SelfSubjectReview");
  return {
    kind: "SelfSubjectReview",
    apiVersion: API_VERSION,
    metadata: { creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, "Z") },
    status: { userInfo: userInfoJson(user) },
  };
}

/**
 * POST /apis/authentication.k8s.io/v1/tokenreviews: whom `spec.token` proves
 * for `spec.audiences` (default: the api's own). `status.audiences` are the
 * audiences asked for when the token proves a user (the reviewer checked it
 * against them); an authenticator that throws leaves its message in
 * `status.error`.
 */
export async function tokenReview(reviewer: TokenReviewer | undefined, apiAudiences: readonly string[], body: Json): Promise<Json> {
  checkKind(body, API_VERSION, "TokenReview");
  const spec = objectAt(body, "spec", "spec") ?? {};
  const token = stringAt(spec, "token", "spec.token");
  if (token === "") throw badRequest("token is required for TokenReview in authentication");
  const asked = stringsAt(spec, "audiences", "spec.audiences");
  const audiences = asked.length ? asked : [...apiAudiences];
  let user: UserInfo | undefined;
  let error = "";
  try {
    user = await reviewer?.authenticateToken(token, audiences.length ? audiences : undefined);
  } catch (err) {
    error = (err as Error).message;
  }
  return {
    kind: "TokenReview",
    apiVersion: API_VERSION,
    metadata: rec(body["metadata"]),
    spec,
    status: {
      ...(user ? { authenticated: true } : {}),
      // A struct, not a pointer: Go writes `user: {}` even for a token that proves nobody.
      user: user ? userInfoJson(user) : {},
      ...(user && audiences.length ? { audiences } : {}),
      ...(error ? { error } : {}),
    },
  };
}
