// Runnables, signals, sleeps, backoff and cleanup.
export { runAll, signalController, onAbort, sleep, backoff, shutdownWithTimeout, DisposableGroup } from "./runnable.js";
export type { Runnable, SignalControllerOptions, BackoffOptions, Backoff } from "./runnable.js";
