// What a request's admission says back beside its answer: warnings (the
// HTTP gateway sends each as a `Warning: 299 - "…"` header; kubectl prints
// them) and audit annotations (for the audit log), and who asks (exempt
// users). A door passes it with the request (the `admission` of its
// RequestScope); without one, warnings and annotations go nowhere.
import type { UserInfo } from "../../auth/types.js";
import type { AdmissionContext, RequestScope, Scoped } from "./request-scope.js";

export type { AdmissionContext };

/** The scope of a request with `ctx` as its admission context. */
export function admissionScope(ctx: AdmissionContext): RequestScope {
  return { admission: ctx };
}

/** Adds a warning to the request in scope. */
export function addWarning(s: Scoped, text: string): void {
  s.scope.admission?.warn(text);
}

/** Adds an audit annotation to the request in scope. */
export function addAuditAnnotation(s: Scoped, key: string, value: string): void {
  s.scope.admission?.annotate?.(key, value);
}

/** The user of the request in scope ("" when unknown). */
export function requestUser(s: Scoped): string {
  return s.scope.admission?.user ?? "";
}

/** The whole user of the request in scope, when the door knows it. */
export function requestUserInfo(s: Scoped): UserInfo | undefined {
  return s.scope.admission?.userInfo;
}
