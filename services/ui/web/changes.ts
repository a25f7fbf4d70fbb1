// The event stream's model, free of the DOM: what changed between two
// versions of an object (as `choreo events` says it: the fields that differ,
// here down to spec.<field> / status.<field> / metadata.<field>), and the
// log of rows — merged from several watches, ordered by revision (revisions
// are cluster-wide), capped to the last MAX_ROWS.

type Json = Record<string, unknown>;

/** Rows kept: older ones are dropped (the page says how many). */
export const MAX_ROWS = 5_000;
/** Objects whose last version is remembered to say what a MODIFIED changed. */
export const MAX_REMEMBERED = 20_000;
/** Fields named per change before "+N more". */
const MAX_FIELDS = 4;

const IGNORED_META = new Set(["resourceVersion", "managedFields", "generation"]);
/** Top-level fields described one level down. */
const DEEP = new Set(["metadata", "spec", "status"]);

/** An object flattened to the fields compared: `kind`, `data`, `spec.replicas`, `metadata.labels`… → their JSON. */
export function fieldsOf(o: Json): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of Object.entries(o)) {
    if (DEEP.has(k) && v && typeof v === "object" && !Array.isArray(v)) {
      for (const [f, w] of Object.entries(v as Json)) {
        if (k === "metadata" && IGNORED_META.has(f)) continue;
        out.set(`${k}.${f}`, JSON.stringify(w));
      }
    } else out.set(k, JSON.stringify(v));
  }
  return out;
}

/** The fields that differ between two flattened versions, sorted. */
export function changedFields(before: Map<string, string>, after: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [k, v] of after) if (before.get(k) !== v) out.push(k);
  for (const k of before.keys()) if (!after.has(k)) out.push(k);
  return out.sort();
}

/** The short "what changed" of a row: "" (added/deleted), "?" (its previous version is unknown), or the fields. */
export function summary(changed: string[] | undefined): string {
  if (changed === undefined) return "?";
  if (changed.length <= MAX_FIELDS) return changed.join(", ");
  return `${changed.slice(0, MAX_FIELDS).join(", ")} +${changed.length - MAX_FIELDS} more`;
}

export type Verb = "ADDED" | "MODIFIED" | "DELETED";

/** One change as the page shows it. */
export interface Row {
  revision: number;
  verb: Verb;
  /** The collection it came from (pods, deployments…) and its kind (Pod, Deployment…). */
  resource: string;
  kind: string;
  namespace: string;
  name: string;
  /** For MODIFIED: the fields that changed; undefined: unknown (first seen after the start). */
  changed: string[] | undefined;
}

/**
 * The rows, ordered by revision: appended when in order (the usual case),
 * inserted in place when a slower watch delivers an older revision; only
 * the last MAX_ROWS kept. Remembers each object's last version (up to
 * MAX_REMEMBERED objects, least recently changed forgotten first).
 */
export class ChangeLog {
  rows: Row[] = [];
  /** Changes received, and rows dropped to keep MAX_ROWS. */
  received = 0;
  dropped = 0;
  private readonly last = new Map<string, Map<string, string>>();

  constructor(
    private readonly maxRows = MAX_ROWS,
    private readonly maxRemembered = MAX_REMEMBERED,
  ) {}

  /** The highest revision shown (0: none). */
  get lastRevision(): number {
    return this.rows.length ? this.rows[this.rows.length - 1]!.revision : 0;
  }

  /** Adds a watch event's change; returns its row. */
  add(resource: string, kind: string, verb: Verb, object: Json & { metadata?: { name?: string; namespace?: string; resourceVersion?: string } }): Row {
    const meta = object.metadata ?? {};
    const key = `${resource}/${meta.namespace ?? ""}/${meta.name ?? ""}`;
    const fields = fieldsOf(object);
    const before = this.last.get(key);
    this.last.delete(key);
    let changed: string[] | undefined = [];
    if (verb === "MODIFIED") changed = before ? changedFields(before, fields) : undefined;
    if (verb !== "DELETED") {
      this.last.set(key, fields);
      if (this.last.size > this.maxRemembered) this.last.delete(this.last.keys().next().value!);
    }
    const row: Row = {
      revision: Number(meta.resourceVersion ?? 0),
      verb,
      resource,
      kind: typeof object["kind"] === "string" ? object["kind"] : kind,
      namespace: meta.namespace ?? "",
      name: meta.name ?? "",
      changed,
    };
    this.insert(row);
    return row;
  }

  private insert(row: Row): void {
    this.received++;
    const rows = this.rows;
    if (!rows.length || rows[rows.length - 1]!.revision <= row.revision) rows.push(row);
    else {
      // The first row with a higher revision: binary search.
      let lo = 0;
      let hi = rows.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (rows[mid]!.revision > row.revision) hi = mid;
        else lo = mid + 1;
      }
      rows.splice(lo, 0, row);
    }
    // Trim in batches (a splice of the front costs the whole array).
    if (rows.length > this.maxRows + this.maxRows / 10) {
      const cut = rows.length - this.maxRows;
      rows.splice(0, cut);
      this.dropped += cut;
    }
  }

  /** The rows as kept, trimmed to exactly MAX_ROWS. */
  kept(): Row[] {
    return this.rows.length > this.maxRows ? this.rows.slice(this.rows.length - this.maxRows) : this.rows;
  }
}
