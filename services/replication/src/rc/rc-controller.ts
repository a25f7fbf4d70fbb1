// The ReplicationController manager: the replicated-set manager with RC's
// equality-based selector (a label map) and the core/v1 status writer.
import { selectorFromSet } from "@choreo/kit/apimachinery";
import type { ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Cache } from "@choreo/kit/informer";
import { ReplicatedSetManager, type ReplicatedKind, type ReplicatedSetOptions } from "./set-manager.js";

export { BURST_REPLICAS } from "./set-manager.js";

/** ReplicationController as a replicated set. */
export const RC_KIND: ReplicatedKind<ReplicationController> = {
  kind: "ReplicationController",
  apiVersion: "v1",
  resource: "replicationcontrollers",
  name: "replicationcontroller",
  selector: (rc) => {
    const sel = rc.spec?.selector ?? {};
    return Object.keys(sel).length > 0 ? selectorFromSet(sel) : undefined;
  },
  replicas: (rc) => rc.spec?.replicas ?? 1,
  wrap: (rc) => ({ kind: { $case: "replicationController", value: rc } }),
};

/** Options of {@link ReplicationManager}. */
export type ReplicationManagerOptions = Omit<ReplicatedSetOptions<ReplicationController>, "kind" | "sets"> & { rcs: Cache<ReplicationController> };

/** Keeps every RC's active pods at spec.replicas. */
export class ReplicationManager extends ReplicatedSetManager<ReplicationController> {
  constructor({ rcs, ...opts }: ReplicationManagerOptions) {
    super({ ...opts, kind: RC_KIND, sets: rcs });
  }
}
