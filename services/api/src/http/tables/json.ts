// Tolerant accessors over Kubernetes JSON: a missing or mistyped field reads
// as its zero value, as Go's printers see it.

export type Json = Record<string, unknown>;

/** The value as an object, `{}` otherwise. */
export function rec(v: unknown): Json {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {};
}

/** The value as a list of objects, `[]` otherwise. */
export function recs(v: unknown): Json[] {
  return Array.isArray(v) ? v.map(rec) : [];
}

/** The value as a string, `""` otherwise. */
export function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

/** The value as a list of strings. */
export function strs(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}

/** The value as an integer (int64s may arrive as strings), 0 otherwise. */
export function int(v: unknown): number {
  if (typeof v === "number" && Number.isFinite(v)) return Math.trunc(v);
  if (typeof v === "string" && /^-?\d+$/.test(v)) return Number(v);
  return 0;
}

/** The value as a boolean. */
export function bool(v: unknown): boolean {
  return v === true;
}

/** `<none>` for an empty string, the string otherwise. */
export function orNone(s: string): string {
  return s === "" ? "<none>" : s;
}

/** `k=v,k2=v2` sorted by key (labels.FormatLabels); `<none>` when empty. */
export function formatLabels(v: unknown): string {
  const m = rec(v);
  const keys = Object.keys(m).sort();
  return keys.length === 0 ? "<none>" : keys.map((k) => `${k}=${str(m[k])}`).join(",");
}

/** A LabelSelector as metav1.FormatLabelSelector prints it; `<none>` when empty. */
export function formatLabelSelector(v: unknown): string {
  const sel = rec(v);
  const parts: string[] = [];
  const labels = rec(sel["matchLabels"]);
  for (const k of Object.keys(labels).sort()) parts.push(`${k}=${str(labels[k])}`);
  for (const e of recs(sel["matchExpressions"])) {
    const key = str(e["key"]);
    const values = strs(e["values"]).slice().sort().join(",");
    switch (str(e["operator"])) {
      case "In":
        parts.push(`${key} in (${values})`);
        break;
      case "NotIn":
        parts.push(`${key} notin (${values})`);
        break;
      case "Exists":
        parts.push(key);
        break;
      case "DoesNotExist":
        parts.push(`!${key}`);
        break;
      default:
        parts.push(`${key} ${str(e["operator"])} (${values})`);
    }
  }
  return parts.length === 0 ? "<none>" : parts.join(",");
}
