// The eviction subresource (pods/NAME/eviction): deletes a pod unless its
// PodDisruptionBudget has no disruption left.
import type { EvictRequest, Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import type { GenericStore } from "../generic/store.js";

/** Evicts a pod: deleted with the eviction's deleteOptions. */
export async function evictPod(store: GenericStore, req: EvictRequest): Promise<ApiObject> {
  return store.delete({ resource: "pods", namespace: req.namespace, name: req.name, options: req.eviction?.deleteOptions });
}
