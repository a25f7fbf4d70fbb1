// Which pods an RC owns (pure): client-go's PodControllerRefManager. A pod
// controlled by the RC whose labels stopped matching is released (that is
// quarantine); an orphan whose labels match is adopted; a pod controlled by
// someone else is never touched. The same rules claim a Deployment's
// ReplicaSets (client-go's ReplicaSetControllerRefManager).
import type { LabelSelector } from "@choreo/kit/apimachinery";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { ObjectMeta } from "@choreo/kit/gen/choreo/meta/v1/meta";
import { controllerOf } from "../pod-template.js";

/** The outcome of {@link claimPods}. */
export interface Claim<T = Pod> {
  /** Pods the RC controls and whose labels match. */
  owned: T[];
  /** Orphans to adopt (then owned). */
  adopt: T[];
  /** Pods the RC controls whose labels no longer match: to release. */
  release: T[];
}

/**
 * Splits the namespace's pods for the controller `uid` with `selector`.
 * `deleting`: the controller is being deleted, so it adopts nothing.
 */
export function claimPods<T extends { metadata?: ObjectMeta | undefined } = Pod>(
  pods: readonly T[],
  uid: string,
  selector: LabelSelector,
  deleting: boolean,
): Claim<T> {
  const claim: Claim<T> = { owned: [], adopt: [], release: [] };
  for (const p of pods) {
    const ref = controllerOf(p.metadata);
    const matches = selector.matches(p.metadata?.labels);
    if (ref) {
      if (ref.uid !== uid) continue;
      if (matches) claim.owned.push(p);
      else if (!p.metadata?.deletionTimestamp) claim.release.push(p);
      continue;
    }
    if (matches && !deleting && !p.metadata?.deletionTimestamp) claim.adopt.push(p);
  }
  return claim;
}
