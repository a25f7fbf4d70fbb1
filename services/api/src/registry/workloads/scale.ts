import { ApiError, emptyMeta, invalid, notFound, type KindInfo } from "@choreo/kit";
import { selectorFromLabelSelector, selectorFromSet } from "@choreo/kit/apimachinery";
import type { Deployment, ReplicaSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { GetScaleRequest, UpdateScaleRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Scale } from "@choreo/kit/gen/choreo/autoscaling/v1/autoscaling";
import type { ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import type { GenericStore } from "../generic/store.js";

/** The kinds with a scale subresource (KindInfo.hasScale). */
function scaleInfo(store: GenericStore, resource: string): KindInfo {
  const info = store.resolve(resource);
  if (!info.hasScale) throw notFound(`${resource}/scale`, "");
  return info;
}

/** A kind with a scale subresource: a map selector (ReplicationController) or a LabelSelector (apps/v1). */
type Scalable = ReplicationController | ReplicaSet | Deployment;

/** Scale.status.selector: the selector in its string form (`app=web`, `tier in (a,b)`). */
function selectorString(o: Scalable): string {
  const sel = o.spec?.selector;
  if (!sel) return "";
  if ("matchLabels" in sel && Array.isArray(sel.matchExpressions)) return selectorFromLabelSelector(sel).toString();
  return selectorFromSet(sel as Record<string, string>).toString();
}

function toScale(rc: Scalable): Scale {
  const m = rc.metadata ?? emptyMeta();
  return {
    apiVersion: "autoscaling/v1",
    kind: "Scale",
    metadata: emptyMeta({ name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, creationTimestamp: m.creationTimestamp }),
    spec: { replicas: rc.spec?.replicas ?? 0 },
    status: { replicas: rc.status?.replicas ?? 0, selector: selectorString(rc) },
  };
}

/** The scale subresource: spec.replicas and the status' replicas and selector. */
export async function getScale(store: GenericStore, req: GetScaleRequest): Promise<Scale> {
  const info = scaleInfo(store, req.resource);
  return toScale((await store.read(info, req.namespace, req.name)).value as Scalable);
}

/** Sets spec.replicas (a new generation); retried on a concurrent write unless the Scale names a resourceVersion. */
export async function updateScale(store: GenericStore, req: UpdateScaleRequest): Promise<Scale> {
  const info = scaleInfo(store, req.resource);
  const replicas = req.scale?.spec?.replicas ?? 0;
  if (replicas < 0)
    throw invalid(
      "Scale",
      req.name,
      [{ field: "spec.replicas", reason: "FieldValueInvalid", message: `Invalid value: ${replicas}: must be greater than or equal to 0` }],
      "autoscaling",
    );
  for (let attempt = 0; ; attempt++) {
    const cur = await store.read(info, req.namespace, req.name);
    const given = req.scale?.metadata?.resourceVersion ?? "";
    store.checkVersion(info, req.name, given, cur);
    const rc = structuredClone(cur.value) as Scalable;
    if (!rc.spec) throw invalid(info.kind, req.name, [{ field: "spec", reason: "FieldValueRequired", message: "Required value" }]);
    if (rc.spec.replicas === replicas) return toScale(cur.value as Scalable);
    rc.spec.replicas = replicas;
    if (rc.metadata) rc.metadata.generation += 1;
    try {
      return toScale((await store.write("update", info, rc, cur)) as Scalable);
    } catch (err) {
      if (given || attempt >= 8 || !(err instanceof ApiError && err.reason === "Conflict")) throw err;
    }
  }
}
