import { badRequest, unwrap } from "@choreo/kit";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { ApiHandlers } from "../handlers/api-handlers.js";

/** Where a pod's log is read: its node, its uid and the (defaulted) container. */
export interface PodLogTarget {
  node: string;
  uid: string;
  container: string;
}

/**
 * Resolves `GET pods/NAME/log` to a node and container the way the
 * kube-apiserver does: the pod must exist (404), the container defaults
 * when the pod has exactly one and must be one of the pod's, init and
 * ephemeral containers included (400), and the pod must be bound (400).
 */
export async function resolvePodLogTarget(
  handlers: Pick<ApiHandlers, "get">,
  req: { namespace: string; name: string; container?: string },
): Promise<PodLogTarget> {
  const obj = await handlers.get({ resource: "pods", namespace: req.namespace, name: req.name });
  const pod = unwrap(obj) as Pod;
  const names = (pod.spec?.containers ?? []).map((c) => c.name);
  const inits = (pod.spec?.initContainers ?? []).map((c) => c.name);
  const ephemeral = (pod.spec?.ephemeralContainers ?? []).map((c) => c.name);
  let container = req.container ?? "";
  if (!container) {
    if (names.length !== 1) {
      const orInit = inits.length > 0 ? ` or one of the init containers: [${inits.join(" ")}]` : "";
      const orEphemeral = ephemeral.length > 0 ? ` or one of the ephemeral containers: [${ephemeral.join(" ")}]` : "";
      throw badRequest(`a container name must be specified for pod ${req.name}, choose one of: [${names.join(" ")}]${orInit}${orEphemeral}`);
    }
    container = names[0] ?? "";
  } else if (![...names, ...inits, ...ephemeral].includes(container)) {
    throw badRequest(`container ${container} is not valid for pod ${req.name}`);
  }
  const node = pod.spec?.nodeName ?? "";
  if (!node) throw badRequest(`pod ${req.name} does not have a host assigned`);
  return { node, uid: pod.metadata?.uid ?? "", container };
}
