// Kubernetes' dryRun=All: a request goes through every step — defaults,
// validation, admission, allocations, conflicts — except the storage write.
// The registry runs such a request inside `withDryRun`, and the generic
// store's write (and the hooks with side effects) ask `isDryRun`.
import { currentScope, withScope } from "./request-scope.js";

/** Runs `fn` as a dry run when `dryRun` is set. */
export function withDryRun<T>(dryRun: boolean | undefined, fn: () => Promise<T>): Promise<T> {
  return dryRun ? withScope({ dryRun: true }, fn) : fn();
}

/** Whether the request in scope is a dry run: nothing may be stored or released. */
export function isDryRun(): boolean {
  return currentScope()?.dryRun === true;
}
