import { TerminalError } from "@choreo/kit/controller";
import type { PodHook } from "./hook.js";

/**
 * Before anything runs: the pod must be bound here, not being deleted, and
 * have containers. Docker and process runtimes will pull images and make
 * volumes here.
 */
export const prestartHook: PodHook = {
  name: "prestart",
  async run({ pod, node }) {
    if (pod.spec?.nodeName !== node) throw new TerminalError(`pod is bound to "${pod.spec?.nodeName ?? ""}", not to this node "${node}"`);
    if (pod.metadata?.deletionTimestamp) throw new Error("pod is being deleted");
    if ((pod.spec?.containers.length ?? 0) === 0) throw new TerminalError("pod has no containers");
  },
};
