// The one AsyncLocalStorage of the api: what a request carries down to the
// code it calls without passing it — the call's abort signal
// (handlers/call-signal.ts), its admission context (admission-context.ts),
// dry run (dry-run.ts), field manager (managed-fields-store.ts) and whether
// it writes through pods/ephemeralcontainers. Each of those modules keeps its
// own functions; they share this scope so that a promise made anywhere in the
// process carries one store, not one per module: on Node 20 every enabled
// AsyncLocalStorage copies its store onto every new promise.
import { AsyncLocalStorage } from "node:async_hooks";
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

/** Everything a request may have in scope; each part is set by its own `with…` and read by its own module. */
export interface RequestScope {
  readonly signal?: AbortSignal | undefined;
  readonly admission?: AdmissionContext | undefined;
  readonly dryRun?: true | undefined;
  readonly manager?: WriteScope | undefined;
  readonly ephemeralContainers?: true | undefined;
}

const scope = new AsyncLocalStorage<RequestScope>();

/** The request scope in effect (undefined outside any). */
export function currentScope(): RequestScope | undefined {
  return scope.getStore();
}

/** Runs `fn` with the scope in effect changed by `part` (the rest kept). */
export function withScope<T>(part: RequestScope, fn: () => Promise<T>): Promise<T> {
  const cur = scope.getStore();
  return scope.run(cur ? { ...cur, ...part } : part, fn);
}
