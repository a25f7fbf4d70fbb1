import type { PodHook } from "./hook.js";

/** After the start: logs the pod's startup with its IP and how long it took since creation. */
export const poststartHook: PodHook = {
  name: "poststart",
  async run({ pod, status, log, node }) {
    const created = Date.parse(pod.metadata?.creationTimestamp ?? "");
    const sinceCreatedMs = Number.isNaN(created) ? undefined : Date.now() - created;
    log.debug({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, node, podIp: status?.podIp, sinceCreatedMs }, "pod started");
  },
};
