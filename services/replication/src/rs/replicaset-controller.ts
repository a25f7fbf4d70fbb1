// The ReplicaSet manager: the replicated-set manager with a set-based
// selector (metav1.LabelSelector: matchLabels and matchExpressions) and the
// apps/v1 status writer.
import { selectorFromLabelSelector, type LabelSelector } from "@choreo/kit/apimachinery";
import type { ReplicaSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { LabelSelector as MetaLabelSelector } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { Cache } from "@choreo/kit/informer";
import { ReplicatedSetManager, type ReplicatedKind, type ReplicatedSetOptions } from "../rc/set-manager.js";

/** The selector of a metav1.LabelSelector; undefined when empty or invalid (it selects nothing). */
export function setSelector(sel: MetaLabelSelector | undefined): LabelSelector | undefined {
  if (!sel || (Object.keys(sel.matchLabels).length === 0 && sel.matchExpressions.length === 0)) return undefined;
  try {
    return selectorFromLabelSelector(sel);
  } catch {
    return undefined;
  }
}

/** ReplicaSet as a replicated set. */
export const RS_KIND: ReplicatedKind<ReplicaSet> = {
  kind: "ReplicaSet",
  apiVersion: "apps/v1",
  resource: "replicasets",
  name: "replicaset",
  selector: (rs) => setSelector(rs.spec?.selector),
  replicas: (rs) => rs.spec?.replicas ?? 1,
  wrap: (rs) => ({ kind: { $case: "replicaSet", value: rs } }),
};

/** Options of {@link ReplicaSetManager}. */
export type ReplicaSetManagerOptions = Omit<ReplicatedSetOptions<ReplicaSet>, "kind" | "sets"> & { replicasets: Cache<ReplicaSet> };

/** Keeps every ReplicaSet's active pods at spec.replicas. */
export class ReplicaSetManager extends ReplicatedSetManager<ReplicaSet> {
  constructor({ replicasets, ...opts }: ReplicaSetManagerOptions) {
    super({ ...opts, kind: RS_KIND, sets: replicasets });
  }
}
