// Server-side apply (PATCH application/apply-patch+yaml): the configuration
// is merged into the live object (or creates it), the manager owns what it
// applied, conflicts with other managers are a 409 unless forced, and an
// apply that changes nothing writes nothing.
import { parse as parseYaml } from "yaml";
import { ApiError, badRequest, emptyMeta, failure, Reason, statusOf, unwrap, type KindInfo } from "@choreo/kit";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import { fromKubeJson, kindOfKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import type { Object as ApiObject, PatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import { applyConfig, pathString, printManager, conflictMessage, same, type Json, type JsonObject } from "./managed-fields.js";
import { entryFromJson, entryToJson } from "./managed-fields-store.js";
import type { Current, GenericStore } from "./store.js";

export const APPLY_PATCH = "application/apply-patch+yaml";

/** The applied configuration: a YAML (or JSON) object of the request's kind, unknown fields dropped. */
function parseConfig(req: PatchRequest, kind: string, apiVersion: string): JsonObject {
  let doc: unknown;
  try {
    doc = parseYaml(req.patch, { maxAliasCount: 100 }) as unknown;
  } catch (err) {
    throw badRequest(`error decoding YAML: ${(err as Error).message}`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw badRequest("the apply configuration must be an object");
  const config = doc as JsonObject;
  const declared = kindOfKubeJson(config);
  if (declared.kind !== kind || declared.apiVersion !== apiVersion)
    throw badRequest(`the apply configuration is a ${declared.kind} (${declared.apiVersion}) but the request is for a ${kind} (${apiVersion})`);
  const meta = (config["metadata"] ??= {}) as JsonObject;
  if (typeof meta !== "object" || meta === null || Array.isArray(meta)) throw badRequest("metadata must be an object");
  if (meta["name"] !== undefined && meta["name"] !== req.name)
    throw badRequest(`the name of the object (${String(meta["name"])}) does not match the name on the URL (${req.name})`);
  if (meta["namespace"] !== undefined && meta["namespace"] !== "" && meta["namespace"] !== req.namespace)
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  // The gateway has reported unknown fields per fieldValidation; here they are dropped so nobody owns them.
  const unknown: string[] = [];
  fromKubeJson(config, { unknownFields: unknown });
  for (const p of unknown) dropPath(config, p);
  return config;
}

/** Deletes `spec.containers[0].foo` from a JSON document. */
function dropPath(doc: JsonObject, path: string): void {
  const parts = path.match(/[^.[\]]+|\[\d+\]/g) ?? [];
  let cur: Json | undefined = doc;
  for (let i = 0; i < parts.length - 1; i++) {
    const p = parts[i]!;
    if (cur === null || typeof cur !== "object") return;
    cur = p.startsWith("[") ? (cur as Json[])[Number(p.slice(1, -1))] : (cur as JsonObject)[p];
  }
  const last = parts[parts.length - 1];
  if (last && cur && typeof cur === "object" && !Array.isArray(cur)) delete cur[last];
}

/** Applies `req.patch` as `req.fieldManager`; creates the object when it does not exist. */
export async function applyPatch(store: GenericStore, req: PatchRequest): Promise<ApiObject> {
  const info = store.resolve(req.resource);
  if (req.subresource) throw badRequest(`server-side apply to the ${req.subresource} subresource is not supported`);
  const manager = req.fieldManager ?? "";
  if (!manager) throw badRequest("PATCH, application/apply-patch+yaml: fieldManager is required for apply requests");
  const config = parseConfig(req, info.kind, info.apiVersion);
  const userVersion =
    typeof (config["metadata"] as JsonObject)["resourceVersion"] === "string" ? String((config["metadata"] as JsonObject)["resourceVersion"]) : "";
  for (let attempt = 0; ; attempt++) {
    let cur: Current | undefined;
    try {
      cur = await store.read(info, req.namespace, req.name);
    } catch (err) {
      if (statusOf(err).code !== 404) throw err;
    }
    const live = cur ? (toKubeJson(store.wrapValue(info, cur.value)) as JsonObject) : undefined;
    const managed = (cur?.value.metadata?.managedFields ?? []).map(entryToJson);
    const r = applyConfig(live, managed, config, { manager, apiVersion: info.apiVersion, force: req.force ?? false, now: nowRfc3339() });
    if ("conflicts" in r) {
      throw new ApiError(
        failure(409, Reason.Conflict, conflictMessage(r.conflicts), {
          causes: r.conflicts.map((c) => ({ reason: "FieldManagerConflict", message: `conflict with ${printManager(c)}`, field: pathString(c.path) })),
        }),
      );
    }
    if (cur && live && same(r.object, live) && same(r.managedFields as unknown as Json, managed as unknown as Json)) return store.wrapValue(info, cur.value);
    const obj = fromKubeJson(r.object, { unknownFields: [] });
    const v = unwrap(obj);
    const meta = (v.metadata ??= emptyMeta());
    meta.name = req.name;
    meta.namespace = info.namespaced ? req.namespace : "";
    meta.managedFields = r.managedFields.map(entryFromJson);
    try {
      if (!cur) return store.wrapValue(info, await store.withScope({ manager: undefined }).createObject(info, v));
      // Apply to the object never writes its status.
      (v as { status?: unknown }).status = (cur.value as { status?: unknown }).status;
      meta.resourceVersion = userVersion;
      const current = asDecoded(store, info, cur);
      return store.wrapValue(info, await store.withScope({ manager: undefined }).replace(info, v, false, current));
    } catch (err) {
      // A concurrent create or write: apply again to what is there now (unless the config pinned a resourceVersion).
      const reason = err instanceof ApiError ? err.reason : "";
      if (userVersion || attempt >= 8 || (reason !== "Conflict" && reason !== "AlreadyExists")) throw err;
    }
  }
}

/**
 * The current version as a patch result would decode it: the JSON round trip
 * writes always-present fields (`resources: {}`) that decode to empty
 * messages where the stored value had none, and an immutable-spec check
 * (pods) would see a change that is not one. Same revision, so the write's
 * precondition is unchanged.
 */
export function asDecoded(store: GenericStore, info: KindInfo, cur: Current): Current {
  const value = unwrap(fromKubeJson(toKubeJson(store.wrapValue(info, cur.value)), { unknownFields: [] }));
  value.metadata = cur.value.metadata;
  return { value, revision: cur.revision };
}
