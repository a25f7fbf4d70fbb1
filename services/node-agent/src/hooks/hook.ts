import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Logger } from "@choreo/kit/log";
import type { PodRuntimeStatus, Runtime } from "../runtime/runtime.js";

/** What a lifecycle hook sees: the pod, the node, the runtime, and what earlier hooks left. */
export interface PodHookContext {
  pod: Pod;
  node: string;
  runtime: Runtime;
  log: Logger;
  /** Set by the start hook. */
  status?: PodRuntimeStatus;
  /** For the stop hook: how long containers get to exit. */
  gracePeriodSeconds?: number;
}

/** One step of a pod's life on the node (Nomad's task runner hooks). */
export interface PodHook {
  readonly name: string;
  run(ctx: PodHookContext): Promise<void>;
}

/** Runs hooks in order; the first that throws stops the chain. */
export async function runHooks(hooks: readonly PodHook[], ctx: PodHookContext): Promise<PodHookContext> {
  for (const h of hooks) await h.run(ctx);
  return ctx;
}
