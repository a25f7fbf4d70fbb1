// The reconcile runner: workers over a work queue, Results mapped to queue operations.
export { Controller } from "./controller.js";
export type { ControllerOptions, Reconcile, Outcome } from "./controller.js";
export { done, requeueAfter, requeue, TerminalError, isTerminalError } from "./result.js";
export type { Result } from "./result.js";
