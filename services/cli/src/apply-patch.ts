// Client-side apply's three-way merge, in merge-patch form: from the last
// applied manifest (original), the new manifest (modified) and the live object
// (current), the JSON merge patch that makes current match modified.
//
//   - keys in original but gone from modified → null (deleted), if current has them
//   - keys of modified whose value differs from current → the modified value
//     (maps recursively; lists whole, as merge patch replaces lists)
//   - values the server defaulted inside list items do not count as changes
//     while the list is what was applied last time
import { isDeepStrictEqual } from "node:util";

export const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

type Json = Record<string, unknown>;

function isMap(v: unknown): v is Json {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** True when every field of `a` is in `b` with the same value (extra fields in b, such as defaults, are ignored). */
export function isSubset(a: unknown, b: unknown): boolean {
  if (isMap(a) && isMap(b)) return Object.entries(a).every(([k, v]) => isSubset(v, b[k]));
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => isSubset(v, b[i]));
  return isDeepStrictEqual(a, b);
}

/** The manifest as kubectl stores it in the annotation: itself, without the annotation. */
export function lastAppliedOf(manifest: Json): string {
  const copy = structuredClone(manifest);
  const meta = isMap(copy["metadata"]) ? copy["metadata"] : undefined;
  const annotations = meta && isMap(meta["annotations"]) ? meta["annotations"] : undefined;
  if (meta && annotations) {
    delete annotations[LAST_APPLIED];
    if (Object.keys(annotations).length === 0) delete meta["annotations"];
  }
  return JSON.stringify(copy);
}

/** The manifest with its last-applied annotation set (what apply sends). */
export function withLastApplied(manifest: Json): Json {
  const applied = lastAppliedOf(manifest);
  const copy = JSON.parse(applied) as Json;
  const meta = isMap(copy["metadata"]) ? copy["metadata"] : (copy["metadata"] = {} as Json);
  const annotations = isMap(meta["annotations"]) ? meta["annotations"] : (meta["annotations"] = {} as Json);
  annotations[LAST_APPLIED] = applied;
  return copy;
}

/** The last-applied manifest recorded on a live object, if any (unparsable reads as none). */
export function originalOf(current: Json): Json | undefined {
  const meta = isMap(current["metadata"]) ? current["metadata"] : {};
  const annotations = isMap(meta["annotations"]) ? meta["annotations"] : {};
  const text = annotations[LAST_APPLIED];
  if (typeof text !== "string") return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return isMap(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function diff(original: Json | undefined, modified: Json, current: Json): Json {
  const patch: Json = {};
  for (const [k, m] of Object.entries(modified)) {
    const c = current[k];
    const o = original?.[k];
    if (m === null) {
      if (c !== undefined && c !== null) patch[k] = null;
    } else if (isMap(m) && isMap(c)) {
      const sub = diff(isMap(o) ? o : undefined, m, c);
      if (Object.keys(sub).length > 0) patch[k] = sub;
    } else if (Array.isArray(m) && Array.isArray(c)) {
      const unchanged = isSubset(m, c) && (o === undefined || isDeepStrictEqual(o, m));
      if (!unchanged) patch[k] = m;
    } else if (!isDeepStrictEqual(m, c)) {
      patch[k] = m;
    }
  }
  if (original) {
    for (const k of Object.keys(original)) {
      if (!(k in modified) && current[k] !== undefined && current[k] !== null) patch[k] = null;
    }
  }
  return patch;
}

/**
 * The merge patch for `apply` against a live object, or undefined when nothing
 * changes. `modified` should already carry its last-applied annotation
 * (see withLastApplied); `original` is read from `current` when not given.
 */
export function computeApplyPatch(modified: Json, current: Json, original: Json | undefined = originalOf(current)): Json | undefined {
  const patch = diff(original, modified, current);
  return Object.keys(patch).length === 0 ? undefined : patch;
}
