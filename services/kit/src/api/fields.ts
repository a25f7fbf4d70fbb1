import type { AnyObject, KindInfo } from "./kinds.js";

function at(o: unknown, path: string): unknown {
  let cur = o;
  for (const part of path.split(".")) {
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
    "metadata.namespace": obj.metadata?.namespace ?? "",
  };
  for (const f of info.selectableFields) out[f] = str(at(obj, TS_PATHS[f] ?? f));
  return out;
}
