// Runnables, signals and cleanup.
export { runAll, signalController, sleep, backoff, shutdownWithTimeout, DisposableGroup } from "./runnable.js";
export type { Runnable } from "./runnable.js";
