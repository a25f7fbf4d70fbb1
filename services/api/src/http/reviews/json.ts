// Reading review bodies: typed accessors that answer 400 for a value of the
// wrong type (as Go's decoder does), and the 422 of a review.
import { ApiError, badRequest, failure, Reason, type StatusCause } from "@choreo/kit";
import type { Json } from "./types.js";

/** `v` when it is an object, else {}. */
export function rec(v: unknown): Json {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {};
}

/** An optional object field: undefined when absent or null, 400 when not an object. */
export function objectAt(o: Json, key: string, path: string): Json | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) throw badRequest(`${path}: expected an object, got ${Array.isArray(v) ? "an array" : typeof v}`);
  return v as Json;
}

/** An optional string field: "" when absent or null, 400 when not a string. */
export function stringAt(o: Json, key: string, path: string): string {
  const v = o[key];
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw badRequest(`${path}: expected a string, got ${typeof v}`);
  return v;
}

/** An optional list of strings: [] when absent or null, 400 otherwise when not one. */
export function stringsAt(o: Json, key: string, path: string): string[] {
  const v = o[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string")) throw badRequest(`${path}: expected an array of strings`);
  return v as string[];
}

/** A map of string lists (`extra`): {} when absent, 400 when not one. */
export function extraAt(o: Json, key: string, path: string): Record<string, string[]> {
  const m = objectAt(o, key, path) ?? {};
  const out: Record<string, string[]> = {};
  for (const k of Object.keys(m)) out[k] = stringsAt(m, k, `${path}[${k}]`);
  return out;
}

/** Kubernetes' 422 for a review: `SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.…: …`. */
export function invalidReview(kind: string, group: string, causes: StatusCause[]): ApiError {
  const list = causes.map((c) => `${c.field}: ${c.message}`);
  const body = list.length === 1 ? list[0] : `[${list.join(", ")}]`;
  return new ApiError(failure(422, Reason.Invalid, `${kind}.${group} "" is invalid: ${body}`, { name: "", group, kind, causes }));
}

/** 400 unless the body is of `kind` in `apiVersion` (either may be absent: the path tells). */
export function checkKind(body: Json, apiVersion: string, kind: string): void {
  const k = body["kind"];
  const v = body["apiVersion"];
  if (k !== undefined && k !== "" && k !== kind) throw badRequest(`the body is a ${String(k)}, but the request is for ${kind}`);
  if (v !== undefined && v !== "" && v !== apiVersion)
    throw badRequest(`the API version in the data (${String(v)}) does not match the expected API version (${apiVersion})`);
}
