// What the replication actor's pod informer keeps of each pod (the kit's
// stripPod): what its controllers read — labels, owners, finalizers, phase,
// conditions, restarts, node, container names and requests — and the job
// completion index annotation; not managedFields, other annotations, env,
// command, probes, mounts or volumes. Its writes to pods are merge patches of
// fields it keeps (ownerReferences, finalizers) or deletions, never a whole
// pod built from the cache.
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { stripPod, type Transform } from "@choreo/kit/informer";
import { COMPLETION_INDEX } from "./jobs/indexed.js";

/** A pod transform for this actor's informer (one per informer: each has its string interner). */
export const podCacheTransform = (): Transform<Pod> => stripPod({ annotations: [COMPLETION_INDEX] });
