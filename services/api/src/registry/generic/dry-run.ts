// Kubernetes' dryRun=All: a request goes through every step — defaults,
// validation, admission, allocations, conflicts — except the storage write.
// The registry runs such a request on a view of the store whose scope says
// so (`dryRunScope`), and the generic store's write (and the hooks with side
// effects) ask `isDryRun`.
import type { RequestScope, Scoped } from "./request-scope.js";

/** The scope part of a request that is (or is not) a dry run. */
export function dryRunScope(dryRun: boolean | undefined): RequestScope {
  return dryRun ? { dryRun: true } : {};
}

/** Whether the request in scope is a dry run: nothing may be stored or released. */
export function isDryRun(s: Scoped): boolean {
  return s.scope.dryRun === true;
}
