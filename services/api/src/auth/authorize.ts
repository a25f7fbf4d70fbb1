// One authorizer for every door: `system:masters` first (as the apiserver's
// privileged-group authorizer), then each authorizer in turn until one
// allows or denies; nobody's opinion is a 403.
import { ApiError, failure, Reason } from "@choreo/kit";
import type { AuditEntry } from "../audit/index.js";
import { MASTERS, type Attributes, type Authorizer, type Decision } from "./types.js";

/** Allows everything: a gateway made without an authorizer (tests, embedded use). */
export const ALLOW_ALL: Authorizer = { authorize: () => ({ allowed: true, reason: "" }) };

/** The union of `authorizers` behind the `system:masters` short-cut. */
export class AuthorizerChain implements Authorizer {
  constructor(private readonly authorizers: Authorizer[]) {}

  authorize(a: Attributes): Decision {
    // No reason, as the apiserver's privileged-group authorizer (a SubjectAccessReview for system:masters has none).
    if (a.user.groups.includes(MASTERS)) return { allowed: true, reason: "" };
    const reasons: string[] = [];
    for (const z of this.authorizers) {
      const d = z.authorize(a);
      if (d.allowed || d.denied) return d;
      if (d.reason) reasons.push(d.reason);
    }
    return { allowed: false, reason: reasons.join("; ") };
  }
}

/**
 * The apiserver's 403 (responsewriters.forbiddenMessage under
 * errors.NewForbidden): `deployments.apps "web" is forbidden: User "alice"
 * cannot get resource "deployments" in API group "apps" in the namespace
 * "prod"`, `… at the cluster scope`, or for a path `forbidden: User "x"
 * cannot get path "/metrics"`; the authorizer's reason after a colon.
 */
export function forbiddenError(a: Attributes, reason: string): ApiError {
  let message: string;
  if (!a.resourceRequest) {
    message = `forbidden: User "${a.user.name}" cannot ${a.verb} path "${a.path}"`;
  } else {
    const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    const scope = a.namespace ? `in the namespace "${a.namespace}"` : "at the cluster scope";
    const gr = a.apiGroup ? `${a.resource}.${a.apiGroup}` : a.resource;
    const what = a.name ? `${gr} "${a.name}"` : gr;
    message = `${what} is forbidden: User "${a.user.name}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" ${scope}`;
  }
  if (reason) message += `: ${reason}`;
  return new ApiError(failure(403, Reason.Forbidden, message, { kind: a.resource, group: a.apiGroup, name: a.name }));
}

/** Throws the 403 unless `authorizer` allows `a`. */
export function authorizeOrThrow(authorizer: Authorizer, a: Attributes): void {
  const d = authorizer.authorize(a);
  if (!d.allowed) throw forbiddenError(a, d.reason);
}

/**
 * Authorizes `attrs` for a door, noting the decision on its audit entry
 * (Kubernetes' `authorization.k8s.io/decision` and `/reason`); a denial
 * finishes the entry with 403 and is thrown.
 */
export function authorizeAudited(authorizer: Authorizer, attrs: Attributes, entry: AuditEntry | undefined): void {
  const d = authorizer.authorize(attrs);
  entry?.annotate("authorization.k8s.io/decision", d.allowed ? "allow" : "forbid");
  if (d.reason) entry?.annotate("authorization.k8s.io/reason", d.reason);
  if (!d.allowed) {
    const err = forbiddenError(attrs, d.reason);
    entry?.finish({ code: 403, status: err.status });
    throw err;
  }
}
