// What a request's admission says back beside its answer: warnings (the
// HTTP gateway sends each as a `Warning: 299 - "…"` header; kubectl prints
// them) and audit annotations (for the audit log), and who asks (exempt
// users). A door runs the request inside `withAdmissionContext`; without
// one, warnings and annotations go nowhere.
import type { UserInfo } from "../../auth/types.js";
import { currentScope, withScope, type AdmissionContext } from "./request-scope.js";

export type { AdmissionContext };

/** Runs `fn` with `ctx` as the admission context of what it calls. */
export function withAdmissionContext<T>(ctx: AdmissionContext, fn: () => Promise<T>): Promise<T> {
  return withScope({ admission: ctx }, fn);
}

/** Adds a warning to the request in scope. */
export function addWarning(text: string): void {
  currentScope()?.admission?.warn(text);
}

/** Adds an audit annotation to the request in scope. */
export function addAuditAnnotation(key: string, value: string): void {
  currentScope()?.admission?.annotate?.(key, value);
}

/** The user of the request in scope ("" when unknown). */
export function requestUser(): string {
  return currentScope()?.admission?.user ?? "";
}

/** The whole user of the request in scope, when the door knows it. */
export function requestUserInfo(): UserInfo | undefined {
  return currentScope()?.admission?.userInfo;
}
