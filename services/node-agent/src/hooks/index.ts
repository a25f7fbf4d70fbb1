// A pod's lifecycle on the node: prestart → start → poststart, and stop.
import { poststartHook } from "./poststart.js";
import { prestartHook } from "./prestart.js";
import { startHook } from "./start.js";
import { stopHook } from "./stop.js";
import type { PodHook } from "./hook.js";

export { runHooks } from "./hook.js";
export type { PodHook, PodHookContext } from "./hook.js";
export { prestartHook, startHook, poststartHook, stopHook };

/** The hooks that bring a pod up, in order. */
export const START_HOOKS: readonly PodHook[] = [prestartHook, startHook, poststartHook];
/** The hooks that take a pod down, in order. */
export const STOP_HOOKS: readonly PodHook[] = [stopHook];
