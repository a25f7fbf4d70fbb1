// managedFields on the write path: the registry's verbs give the store the
// request's field manager in its scope (`managerScope`), and the generic
// store's write records the Update that manager made (`trackManagedFields`).
import type { AnyObject, KindInfo } from "@choreo/kit";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import { toKubeJson } from "@choreo/kit/kube-json";
import type { ManagedFieldsEntry } from "@choreo/kit/gen/choreo/meta/v1/meta";
import { recordUpdate, type Json, type JsonObject, type ManagedEntry } from "./managed-fields.js";
import type { RequestScope, WriteScope } from "./request-scope.js";

/** The scope part of a request whose writes to `resource` `manager` owns (no manager: nothing is recorded). */
export function managerScope(manager: string | undefined, resource: string, subresource: string): RequestScope {
  return manager ? { manager: { manager, subresource, resource } } : {};
}

/** ManagedFieldsEntry (protobuf) → Kubernetes JSON. */
export function entryToJson(e: ManagedFieldsEntry): ManagedEntry {
  const raw = e.fieldsV1?.raw;
  return {
    manager: e.manager,
    operation: e.operation === "Apply" ? "Apply" : "Update",
    apiVersion: e.apiVersion,
    time: e.time,
    fieldsType: "FieldsV1",
    fieldsV1: raw && raw.length > 0 ? (JSON.parse(Buffer.from(raw).toString("utf8")) as JsonObject) : {},
    ...(e.subresource ? { subresource: e.subresource } : {}),
  };
}

/** Kubernetes JSON → ManagedFieldsEntry (protobuf). */
export function entryFromJson(e: ManagedEntry): ManagedFieldsEntry {
  return {
    manager: e.manager,
    operation: e.operation,
    apiVersion: e.apiVersion,
    time: e.time,
    fieldsType: "FieldsV1",
    fieldsV1: { raw: new Uint8Array(Buffer.from(JSON.stringify(e.fieldsV1))) },
    subresource: e.subresource ?? "",
  };
}

const asJson = (info: KindInfo, v: AnyObject): Json => toKubeJson({ kind: { $case: info.case, value: v } as never }) as Json;

/**
 * Called by the store before every create and update: an object written
 * without managedFields keeps the stored ones; with a manager in scope, its
 * Update (`old` → `v`) is recorded.
 */
export function trackManagedFields(info: KindInfo, v: AnyObject, old: AnyObject | undefined, s: WriteScope | undefined): void {
  const meta = v.metadata;
  if (!meta) return;
  if (meta.managedFields.length === 0 && old?.metadata?.managedFields.length) meta.managedFields = structuredClone(old.metadata.managedFields);
  if (!s || s.resource !== info.resource) return;
  const entries = recordUpdate(meta.managedFields.map(entryToJson), old ? asJson(info, old) : undefined, asJson(info, v), {
    manager: s.manager,
    apiVersion: info.apiVersion,
    subresource: s.subresource,
    now: nowRfc3339(),
  });
  meta.managedFields = entries.map(entryFromJson);
}
