// What the scheduler's pod informer keeps of each pod (the kit's stripPod):
// the scheduling facts — node, scheduler name, priority, node selector,
// affinity, tolerations, container requests and host ports, owners, labels,
// phase and conditions — not managedFields, annotations, env, command,
// probes, mounts or volumes. Its writes to pods are binds, patches (the
// DisruptionTarget condition, nominatedNodeName) and deletions; the node
// lifecycle marks a pod on the version it gets from the api.
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { stripPod, type Transform } from "@choreo/kit/informer";

/** A pod transform for this actor's informer (one per informer: each has its string interner). */
export const podCacheTransform = (): Transform<Pod> => stripPod();
