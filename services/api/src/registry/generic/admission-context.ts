// What a request's admission says back beside its answer: warnings (the
// HTTP gateway sends each as a `Warning: 299 - "…"` header; kubectl prints
// them) and audit annotations (for the audit log), and who asks (exempt
// users). A door runs the request inside `withAdmissionContext`; without
// one, warnings and annotations go nowhere.
import { AsyncLocalStorage } from "node:async_hooks";
import type { UserInfo } from "../../auth/types.js";

export interface AdmissionContext {
  /** The user of the request, when the door knows it. */
  user?: string;
  /** Who asks, whole (groups too): for checks that authorize again, as RBAC's escalation check. */
  userInfo?: UserInfo;
  /** Receives one warning text (no quoting, no code). */
  warn(text: string): void;
  /** Receives one audit annotation (`pod-security.kubernetes.io/audit-violations`). */
  annotate?(key: string, value: string): void;
}

const scope = new AsyncLocalStorage<AdmissionContext>();

/** Runs `fn` with `ctx` as the admission context of what it calls. */
export function withAdmissionContext<T>(ctx: AdmissionContext, fn: () => Promise<T>): Promise<T> {
  return scope.run(ctx, fn);
}

/** Adds a warning to the request in scope. */
export function addWarning(text: string): void {
  scope.getStore()?.warn(text);
}

/** Adds an audit annotation to the request in scope. */
export function addAuditAnnotation(key: string, value: string): void {
  scope.getStore()?.annotate?.(key, value);
}

/** The user of the request in scope ("" when unknown). */
export function requestUser(): string {
  return scope.getStore()?.user ?? "";
}

/** The whole user of the request in scope, when the door knows it. */
export function requestUserInfo(): UserInfo | undefined {
  return scope.getStore()?.userInfo;
}
