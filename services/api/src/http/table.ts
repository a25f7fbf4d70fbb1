// Table responses (meta.k8s.io/v1 Table) for kubectl get: the columns per
// kind live in ./tables; this file negotiates the version and options.
import type { KindInfo } from "@choreo/kit";
import { toTable } from "./tables/index.js";

/** What the table builder takes besides the objects. */
export interface TableOptions {
  includeObject: "None" | "Metadata" | "Object";
  resourceVersion: string;
  continue?: string;
}

/** A Table of the objects, with the apiVersion the client negotiated. */
export async function buildTable(kind: KindInfo, objects: unknown[], opts: TableOptions, version: "v1" | "v1beta1"): Promise<unknown> {
  const t = toTable(kind, objects as Record<string, unknown>[], opts);
  return version === "v1beta1" ? { ...t, apiVersion: "meta.k8s.io/v1beta1" } : t;
}

/** The includeObject query parameter (default Metadata). */
export function includeObjectOf(url: URL): TableOptions["includeObject"] {
  const v = url.searchParams.get("includeObject");
  return v === "None" || v === "Object" ? v : "Metadata";
}
