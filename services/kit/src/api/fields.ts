import { Interner } from "../informer/transform.js";
import type { AnyObject, KindInfo } from "./kinds.js";

/** Each field path's parts, split once (selectableFields runs for every change in every process). */
const PARTS = new Map<string, readonly string[]>();

function at(o: unknown, path: string): unknown {
  let parts = PARTS.get(path);
  if (!parts) PARTS.set(path, (parts = path.split(".")));
  let cur = o;
  for (const part of parts) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function str(v: unknown): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "object") {
    // IntOrString and similar one-of wrappers.
    const inner = (v as { value?: { value?: unknown } }).value?.value;
    return inner === undefined ? "" : String(inner);
  }
  return String(v);
}

// Field paths that differ from the ts-proto property path.
const TS_PATHS: Record<string, string> = {
  "spec.clusterIP": "spec.clusterIp",
  "status.podIP": "status.podIp",
  source: "source.component",
  "status.successful": "status.succeeded",
};

/**
 * The values of the field-selectable fields of an object (metadata.name,
 * metadata.namespace and the kind's own), as strings the way Kubernetes
 * compares them.
 */
export function selectableFields(info: KindInfo, obj: AnyObject): Record<string, string> {
  const out: Record<string, string> = {
    "metadata.name": obj.metadata?.name ?? "",
    "metadata.namespace": VALUES.of(obj.metadata?.namespace ?? ""),
  };
  for (const f of info.selectableFields) {
    const v = str(at(obj, TS_PATHS[f] ?? f));
    out[f] = ONE_PER_OBJECT.has(f) ? v : VALUES.of(v);
  }
  return out;
}

/** Fields whose values are the object's own (an IP, the name or uid an Event is about): not shared. The rest (a node's name, a phase) repeat across objects. */
const ONE_PER_OBJECT = new Set(["status.podIP", "spec.clusterIP", "involvedObject.name", "involvedObject.uid", "involvedObject.resourceVersion"]);
/** The shared copies of field values: an api or actor keeps these records for every object it caches. Bounded. */
const VALUES = new Interner(10_000);
