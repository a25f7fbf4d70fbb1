import type { PodHook } from "./hook.js";

/** Starts the pod's sandbox and containers through the runtime. */
export const startHook: PodHook = {
  name: "start",
  async run(ctx) {
    ctx.status = await ctx.runtime.startPod(ctx.pod);
  },
};
