// metrics.k8s.io in discovery, as metrics-server registers it: the group
// in /apis (kubectl top checks for it), its resource list, and its entry in
// the aggregated discovery document.
import { GROUP, GROUP_VERSION, VERSION } from "./convert.js";

const VERBS = ["get", "list"];

/** The group's entry in /apis (APIGroupList.groups[]) and the body of GET /apis/metrics.k8s.io. */
export function metricsGroupEntry(): Record<string, unknown> {
  const v = { groupVersion: GROUP_VERSION, version: VERSION };
  return { name: GROUP, versions: [v], preferredVersion: v };
}

/** GET /apis/metrics.k8s.io/v1beta1 */
export function metricsResourceList(): Record<string, unknown> {
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: GROUP_VERSION,
    resources: [
      { name: "nodes", singularName: "", namespaced: false, kind: "NodeMetrics", verbs: VERBS },
      { name: "pods", singularName: "", namespaced: true, kind: "PodMetrics", verbs: VERBS },
    ],
  };
}

/** The group in the aggregated discovery of /apis (APIGroupDiscovery). */
export function metricsAggregatedGroup(): Record<string, unknown> {
  const resource = (name: string, kind: string, scope: string) => ({
    resource: name,
    responseKind: { group: GROUP, version: VERSION, kind },
    scope,
    singularResource: "",
    verbs: VERBS,
  });
  return {
    metadata: { name: GROUP, creationTimestamp: null },
    versions: [
      { version: VERSION, resources: [resource("nodes", "NodeMetrics", "Cluster"), resource("pods", "PodMetrics", "Namespaced")], freshness: "Current" },
    ],
  };
}
