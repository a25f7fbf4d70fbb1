import { ApiError, badRequest, emptyMeta, invalid, unwrap } from "@choreo/kit";
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, kubeStrategicSchema, type JsonValue } from "@choreo/kit/apimachinery";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import type { Object as ApiObject, PatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import { applyPatch, APPLY_PATCH, asDecoded } from "./apply.js";
import { managerScope } from "./managed-fields-store.js";
import type { GenericStore } from "./store.js";

const PATCH_TYPES = ["application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json", APPLY_PATCH];

/**
 * A patch (server-side apply goes to apply.ts): applied to the stored object and written as an update (or a
 * status update), retried on a concurrent write unless the patch names a
 * resourceVersion.
 */
export async function patchObject(store: GenericStore, req: PatchRequest): Promise<ApiObject> {
  if (req.patchType === APPLY_PATCH) return applyPatch(store, req);
  return patchOnce(store.withScope(managerScope(req.fieldManager, req.resource, req.subresource === "status" ? "status" : "")), req);
}

async function patchOnce(store: GenericStore, req: PatchRequest): Promise<ApiObject> {
  const info = store.resolve(req.resource);
  if (!PATCH_TYPES.includes(req.patchType))
    throw new ApiError({
      ...badRequest("").status,
      code: 415,
      reason: "UnsupportedMediaType",
      message: `the body of the request was in an unknown format - accepted media types include: ${PATCH_TYPES.join(", ")}`,
    });
  let patch: JsonValue;
  try {
    patch = JSON.parse(req.patch) as JsonValue;
  } catch (err) {
    throw badRequest(`error decoding patch: ${(err as Error).message}`);
  }
  const statusOnly = req.subresource === "status";
  for (let attempt = 0; ; attempt++) {
    const cur = await store.read(info, req.namespace, req.name);
    const base = toKubeJson(store.wrapValue(info, cur.value));
    (base["metadata"] as Record<string, unknown>)["resourceVersion"] = "";
    let patched: JsonValue;
    try {
      if (req.patchType === "application/json-patch+json") patched = applyJsonPatch(base as JsonValue, patch);
      else if (req.patchType === "application/merge-patch+json") patched = applyMergePatch(base as JsonValue, patch);
      else patched = applyStrategicMergePatch(base as JsonValue, patch, kubeStrategicSchema);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new ApiError({
        ...invalid(info.kind, req.name, []).status,
        code: 422,
        message: `the server rejected our request due to an error in our request: ${(err as Error).message}`,
        reason: "Invalid",
      });
    }
    // Unknown fields were reported by the gateway (fieldValidation); they are dropped here.
    const obj = fromKubeJson(patched, { unknownFields: [] });
    if (obj.kind?.$case !== info.case) throw badRequest("the patch may not change the kind of the object");
    const v = unwrap(obj);
    const meta = (v.metadata ??= emptyMeta());
    if ((meta.name && meta.name !== req.name) || (info.namespaced && meta.namespace && meta.namespace !== req.namespace)) {
      throw badRequest("the name or namespace of the object may not be changed by a patch");
    }
    meta.name = req.name;
    meta.namespace = info.namespaced ? req.namespace : "";
    // A patch that does not touch status keeps it exactly (the JSON round trip is not bit-exact for every optional field).
    if (!statusOnly && info.hasStatus && !patchTouchesStatus(req.patchType, patch))
      (v as { status?: unknown }).status = (cur.value as { status?: unknown }).status;
    const userVersion = meta.resourceVersion;
    try {
      return store.wrapValue(info, await store.replace(info, v, statusOnly, asDecoded(store, info, cur)));
    } catch (err) {
      // Without a resourceVersion in the patch, a concurrent write just means "patch again".
      if (userVersion || attempt >= 8 || !(err instanceof ApiError && err.reason === "Conflict")) throw err;
    }
  }
}

/** Whether a patch names the status (a JSON patch op under /status, or a status key in a merge patch). */
function patchTouchesStatus(patchType: string, patch: JsonValue): boolean {
  if (patchType === "application/json-patch+json")
    return (
      Array.isArray(patch) &&
      patch.some(
        (op) =>
          typeof op === "object" &&
          op !== null &&
          !Array.isArray(op) &&
          typeof op["path"] === "string" &&
          (op["path"] === "/status" || op["path"].startsWith("/status/")),
      )
    );
  return typeof patch === "object" && patch !== null && !Array.isArray(patch) && "status" in patch;
}
