// Runnables, signals, sleeps, backoff and cleanup.
export { runAll, signalController, stopTimeoutMs, onAbort, orAbort, sleep, backoff, shutdownWithTimeout, DisposableGroup } from "./runnable.js";
export type { Runnable, RunAllOptions, SignalControllerOptions, BackoffOptions, Backoff } from "./runnable.js";
