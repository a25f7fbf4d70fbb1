// What the endpoints actor's pod informer keeps of each pod (the kit's
// stripPod): labels, IPs, readiness, node, hostname and container ports — not
// managedFields, annotations, env, command, probes, mounts or volumes. It
// never writes pods.
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { stripPod, type Transform } from "@choreo/kit/informer";

/** A pod transform for this actor's informer (one per informer: each has its string interner). */
export const podCacheTransform = (): Transform<Pod> => stripPod();
