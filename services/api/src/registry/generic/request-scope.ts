// What a request carries down to the code it calls: its admission context
// (admission-context.ts), dry run (dry-run.ts), field manager
// (managed-fields-store.ts) and whether it writes through
// pods/ephemeralcontainers. Passed explicitly — a door hands it to the
// registry's verb, the registry to a view of the generic store
// (`GenericStore.withScope`), the store to the strategy hooks — rather than
// through an AsyncLocalStorage: on Node 20 an enabled AsyncLocalStorage puts
// promise hooks on every promise the process makes (issue 15).
import type { UserInfo } from "../../auth/types.js";

/** What a request's admission says back beside its answer, and who asks. */
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

/** The manager a write is recorded for in managedFields. */
export interface WriteScope {
  manager: string;
  /** "" (the object), "status" or "scale". */
  subresource: string;
  /** Only writes of this resource are recorded (a hook writing another kind is not the caller's doing). */
  resource: string;
}

/** Everything a request may have in scope; each part is made and read by its own module (dryRunScope and isDryRun, …). */
export interface RequestScope {
  readonly admission?: AdmissionContext | undefined;
  readonly dryRun?: true | undefined;
  readonly manager?: WriteScope | undefined;
  readonly ephemeralContainers?: true | undefined;
  /**
   * The request was decoded for this call alone and nothing reads it after
   * (the NATS door, unless the audit keeps its body): create, update and
   * updateStatus fill and change its object in place instead of a copy.
   */
  readonly ownsRequest?: true | undefined;
}

/** No request in scope: the api's own writes (controllers, bootstrap). */
export const NO_SCOPE: RequestScope = Object.freeze({});

/** Something a request scope is read from: the generic store (a request's view of it) or the scope itself. */
export interface Scoped {
  readonly scope: RequestScope;
}

/** `scope` with `part` changed (the rest kept). */
export function within(scope: RequestScope, part: RequestScope): RequestScope {
  return { ...scope, ...part };
}
