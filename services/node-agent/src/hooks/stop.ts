import type { PodHook } from "./hook.js";

/** Stops the pod's containers, giving them the grace period, and frees its sandbox. */
export const stopHook: PodHook = {
  name: "stop",
  async run({ pod, runtime, gracePeriodSeconds }) {
    const m = pod.metadata;
    await runtime.stopPod({ uid: m?.uid ?? "", namespace: m?.namespace ?? "", name: m?.name ?? "" }, gracePeriodSeconds ?? 0);
  },
};
