// The signal of the call being served: a door that knows when its caller gave
// up (a gRPC deadline or cancel) runs the handler inside `withCallSignal`, and
// waits deep in the api (the object cache reaching a revision) end with it
// instead of running to their own timeout for nobody.
import { AsyncLocalStorage } from "node:async_hooks";

const scope = new AsyncLocalStorage<AbortSignal>();

/** Runs `fn` with `signal` as the signal of the call it serves. */
export function withCallSignal<T>(signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
  return scope.run(signal, fn);
}

/** The signal of the call in scope; undefined outside a door that gives one. */
export function callSignal(): AbortSignal | undefined {
  return scope.getStore();
}
