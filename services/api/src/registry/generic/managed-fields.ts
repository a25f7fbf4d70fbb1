// Field sets and managedFields (Kubernetes' structured-merge-diff, for the
// kinds choreo serves): which manager owns which field, how an Update moves
// ownership, and how an Apply merges, conflicts and removes. Pure functions
// over Kubernetes JSON; the store and the apply path call them.
import { kubeStrategicSchema } from "@choreo/kit/apimachinery";

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

/** One managedFields entry, as Kubernetes JSON. */
export interface ManagedEntry {
  manager: string;
  operation: "Apply" | "Update";
  apiVersion: string;
  time: string;
  fieldsType: "FieldsV1";
  fieldsV1: JsonObject;
  subresource?: string;
}

/**
 * A set of field paths as a tree. Children are keyed as in FieldsV1:
 * `f:<field>`, `k:<merge key JSON>` (an item of an associative list),
 * `v:<value JSON>` (an item of a set). `self` marks the node itself a
 * member (a leaf field, a list item, an atomic list).
 */
export class FieldSet {
  self = false;
  readonly children = new Map<string, FieldSet>();

  child(key: string): FieldSet {
    let c = this.children.get(key);
    if (!c) this.children.set(key, (c = new FieldSet()));
    return c;
  }

  get empty(): boolean {
    return !this.self && this.children.size === 0;
  }

  /** Every member path, parents before children. */
  members(prefix: string[] = []): string[][] {
    const out: string[][] = [];
    for (const [k, c] of this.children) {
      const p = [...prefix, k];
      if (c.self) out.push(p);
      out.push(...c.members(p));
    }
    return out;
  }

  has(path: readonly string[]): boolean {
    let n: FieldSet | undefined = this as FieldSet;
    for (const k of path) {
      n = n.children.get(k);
      if (!n) return false;
    }
    return n.self;
  }

  add(path: readonly string[]): void {
    let n: FieldSet = this as FieldSet;
    for (const k of path) n = n.child(k);
    n.self = true;
  }

  /** Removes the member at path (not its children); prunes empty nodes. */
  remove(path: readonly string[]): void {
    const walk = (n: FieldSet, i: number): void => {
      if (i === path.length) {
        n.self = false;
        return;
      }
      const c = n.children.get(path[i]!);
      if (!c) return;
      walk(c, i + 1);
      if (c.empty) n.children.delete(path[i]!);
    };
    walk(this, 0);
  }

  static of(paths: Iterable<readonly string[]>): FieldSet {
    const s = new FieldSet();
    for (const p of paths) s.add(p);
    return s;
  }

  union(o: FieldSet): FieldSet {
    return FieldSet.of([...this.members(), ...o.members()]);
  }

  minus(o: FieldSet): FieldSet {
    return FieldSet.of(this.members().filter((p) => !o.has(p)));
  }

  intersect(o: FieldSet): FieldSet {
    return FieldSet.of(this.members().filter((p) => o.has(p)));
  }

  equals(o: FieldSet): boolean {
    const a = this.members().map((p) => p.join("\u0000"));
    const b = new Set(o.members().map((p) => p.join("\u0000")));
    return a.length === b.size && a.every((k) => b.has(k));
  }

  /** As FieldsV1 JSON: `{"f:spec":{"f:replicas":{}}}`, `".": {}` for a member with children. */
  toFieldsV1(): JsonObject {
    const out: JsonObject = {};
    if (this.self && this.children.size > 0) out["."] = {};
    for (const [k, c] of this.children) out[k] = c.toFieldsV1();
    return out;
  }

  static fromFieldsV1(json: unknown): FieldSet {
    const s = new FieldSet();
    const walk = (n: FieldSet, v: unknown): void => {
      if (typeof v !== "object" || v === null || Array.isArray(v)) return;
      const entries = Object.entries(v as Record<string, unknown>);
      for (const [k, x] of entries) {
        if (k === ".") {
          n.self = true;
          continue;
        }
        const c = n.child(k);
        if (typeof x === "object" && x !== null && Object.keys(x).length === 0) c.self = true;
        else walk(c, x);
      }
    };
    walk(s, json);
    return s;
  }
}

const isObject = (v: unknown): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

/** The merge key of a list at `jsonPath` (field names only): containers by name, ports by containerPort… */
export function mergeKeyOf(jsonPath: readonly string[]): string | undefined {
  return kubeStrategicSchema.mergeKey(jsonPath);
}

const isSetList = (jsonPath: readonly string[]): boolean => kubeStrategicSchema.mergesPrimitives?.(jsonPath) ?? false;

const itemKey = (mk: string, item: JsonObject): string => `k:${JSON.stringify({ [mk]: item[mk] ?? null })}`;

// Written by the server, never owned: Kubernetes strips these from every field set.
const SERVER_META = new Set([
  "name",
  "namespace",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "managedFields",
  "selfLink",
]);

/**
 * The fields an object sets. `subresource` "status" keeps only status;
 * otherwise status is left out (a spec writer does not own status).
 */
export function fieldsOf(obj: Json | undefined, subresource = ""): FieldSet {
  const s = new FieldSet();
  if (!isObject(obj)) return s;
  const walkObject = (o: JsonObject, node: FieldSet, jsonPath: string[]): void => {
    for (const [k, v] of Object.entries(o)) {
      if (jsonPath.length === 0) {
        if (k === "apiVersion" || k === "kind") continue;
        if ((k === "status") !== (subresource === "status")) continue;
      }
      if (jsonPath.length === 1 && jsonPath[0] === "metadata" && SERVER_META.has(k)) continue;
      if (v === undefined) continue;
      const c = node.child(`f:${k}`);
      walkValue(v, c, [...jsonPath, k]);
      if (c.empty) node.children.delete(`f:${k}`); // only server-owned keys inside (metadata: {name})
    }
  };
  const walkValue = (v: Json, node: FieldSet, jsonPath: string[]): void => {
    if (isObject(v) && Object.keys(v).length > 0) {
      walkObject(v, node, jsonPath);
      return;
    }
    if (Array.isArray(v)) {
      const mk = mergeKeyOf(jsonPath);
      if (mk && v.every(isObject)) {
        for (const item of v as JsonObject[]) {
          const c = node.child(itemKey(mk, item));
          c.self = true;
          walkObject(item, c, jsonPath);
        }
        return;
      }
      if (isSetList(jsonPath)) {
        for (const item of v) node.child(`v:${JSON.stringify(item)}`).self = true;
        return;
      }
    }
    node.self = true; // scalar, null, empty map, atomic list
  };
  walkObject(obj, s, []);
  return s;
}

/** The value at a field-set path; undefined when absent. */
export function valueAt(obj: Json | undefined, path: readonly string[]): Json | undefined {
  let cur: Json | undefined = obj;
  for (const el of path) {
    if (cur === undefined) return undefined;
    if (el.startsWith("f:")) {
      cur = isObject(cur) ? cur[el.slice(2)] : undefined;
    } else if (el.startsWith("k:")) {
      if (!Array.isArray(cur)) return undefined;
      const want = JSON.parse(el.slice(2)) as JsonObject;
      cur = cur.find((x) => isObject(x) && Object.entries(want).every(([k, v]) => same(x[k] ?? null, v)));
    } else if (el.startsWith("v:")) {
      if (!Array.isArray(cur)) return undefined;
      const want = JSON.parse(el.slice(2)) as Json;
      cur = cur.find((x) => same(x, want));
    } else return undefined;
  }
  return cur;
}

/** Removes the field, list item or set value at path (in place). */
export function removeAt(obj: Json, path: readonly string[]): void {
  if (path.length === 0) return;
  const parent = valueAt(obj, path.slice(0, -1));
  const el = path[path.length - 1]!;
  if (el.startsWith("f:")) {
    if (isObject(parent)) delete parent[el.slice(2)];
    return;
  }
  if (!Array.isArray(parent)) return;
  const target = valueAt(obj, path);
  const i = parent.indexOf(target as Json);
  if (i >= 0) parent.splice(i, 1);
}

/** Deep equality of JSON values (key order ignored). */
export function same(a: Json | undefined, b: Json | undefined): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && same(a[k], b[k]));
  }
  return false;
}

/**
 * Server-side apply's merge: maps merge, associative lists merge by key
 * (live items the config does not name stay), sets union, everything else
 * is replaced by the config.
 */
export function mergeApplied(live: Json | undefined, applied: Json, jsonPath: string[] = []): Json {
  if (isObject(applied)) {
    const out: JsonObject = isObject(live) ? { ...live } : {};
    for (const [k, v] of Object.entries(applied)) out[k] = mergeApplied(out[k], v, [...jsonPath, k]);
    return out;
  }
  if (Array.isArray(applied) && Array.isArray(live)) {
    const mk = mergeKeyOf(jsonPath);
    if (mk && applied.every(isObject) && live.every(isObject)) {
      const out = [...live] as JsonObject[];
      for (const item of applied as JsonObject[]) {
        const i = out.findIndex((x) => same(x[mk] ?? null, item[mk] ?? null));
        if (i >= 0) out[i] = mergeApplied(out[i], item, jsonPath) as JsonObject;
        else out.push(item);
      }
      return out;
    }
    if (isSetList(jsonPath)) return [...live, ...applied.filter((x) => !live.some((y) => same(x, y)))];
  }
  return structuredClone(applied);
}

/** A path as Kubernetes prints it in conflicts: `.spec.replicas`, `.spec.containers[name="web"].image`. */
export function pathString(path: readonly string[]): string {
  let out = "";
  for (const el of path) {
    if (el.startsWith("f:")) out += `.${el.slice(2)}`;
    else if (el.startsWith("k:")) {
      const keys = JSON.parse(el.slice(2)) as JsonObject;
      out += `[${Object.entries(keys)
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
        .join(",")}]`;
    } else if (el.startsWith("v:")) out += `[=${el.slice(2)}]`;
  }
  return out;
}

export interface Conflict {
  manager: string;
  /** The entry's operation and apiVersion: an Update manager prints as `"name" using v1`. */
  operation: string;
  apiVersion: string;
  path: string[];
}

/** A manager as Kubernetes prints it in conflicts. */
export function printManager(c: Pick<Conflict, "manager" | "operation" | "apiVersion">): string {
  return c.operation === "Update" ? `"${c.manager}" using ${c.apiVersion}` : `"${c.manager}"`;
}

export const entrySet = (e: ManagedEntry): FieldSet => FieldSet.fromFieldsV1(e.fieldsV1);

const sameEntry = (e: ManagedEntry, manager: string, operation: string, subresource: string): boolean =>
  e.manager === manager && e.operation === operation && (e.subresource ?? "") === subresource;

function withSet(e: ManagedEntry, set: FieldSet, now: string): ManagedEntry {
  const changed = !entrySet(e).equals(set);
  return { ...e, fieldsV1: set.toFieldsV1(), time: changed ? now : e.time };
}

function newEntry(manager: string, operation: "Apply" | "Update", apiVersion: string, subresource: string, set: FieldSet, now: string): ManagedEntry {
  return { manager, operation, apiVersion, time: now, fieldsType: "FieldsV1", fieldsV1: set.toFieldsV1(), ...(subresource ? { subresource } : {}) };
}

/**
 * An Update by `manager` from `old` (undefined: a create) to `next`: the
 * manager gains the fields it set or changed, other managers lose them, and
 * fields that disappeared are nobody's. Returns the new managedFields.
 */
export function recordUpdate(
  managed: readonly ManagedEntry[],
  old: Json | undefined,
  next: Json,
  opts: { manager: string; apiVersion: string; subresource?: string; now: string },
): ManagedEntry[] {
  const sub = opts.subresource ?? "";
  const oldSet = fieldsOf(old, sub);
  const newSet = fieldsOf(next, sub);
  const changed = FieldSet.of(newSet.members().filter((p) => !oldSet.has(p) || (isLeaf(newSet, p) && !same(valueAt(old, p), valueAt(next, p)))));
  const removed = oldSet.minus(newSet);
  const out: ManagedEntry[] = [];
  let mine: ManagedEntry | undefined;
  for (const e of managed) {
    if (sameEntry(e, opts.manager, "Update", sub)) {
      mine = withSet(e, entrySet(e).union(changed).minus(removed), opts.now);
      out.push(mine);
      continue;
    }
    const set = entrySet(e).minus(changed).minus(removed);
    if (!set.empty) out.push(withSet(e, set, opts.now));
  }
  if (!mine && !changed.empty) out.push(newEntry(opts.manager, "Update", opts.apiVersion, sub, changed, opts.now));
  return out.filter((e) => e !== mine || !entrySet(e).empty);
}

function isLeaf(set: FieldSet, path: readonly string[]): boolean {
  let n: FieldSet | undefined = set;
  for (const k of path) n = n?.children.get(k);
  return n !== undefined && n.children.size === 0;
}

export interface ApplyOutcome {
  object: JsonObject;
  managedFields: ManagedEntry[];
}

/**
 * Server-side apply of `applied` by `manager` onto `live` (undefined: the
 * object does not exist). Conflicts — fields in the config owned by another
 * manager with a different live value — are returned unless `force`, in
 * which case the manager takes them. Fields the manager applied before and
 * no longer does are removed unless another manager owns them.
 */
export function applyConfig(
  live: JsonObject | undefined,
  managed: readonly ManagedEntry[],
  applied: JsonObject,
  opts: { manager: string; apiVersion: string; force: boolean; now: string },
): { conflicts: Conflict[] } | ApplyOutcome {
  const appliedSet = fieldsOf(applied);
  const conflicts: Conflict[] = [];
  const taken = new Map<ManagedEntry, FieldSet>();
  for (const e of managed) {
    if (sameEntry(e, opts.manager, "Apply", "")) continue;
    const theirs = entrySet(e).intersect(appliedSet);
    for (const p of theirs.members()) {
      if (!isLeaf(appliedSet, p)) continue;
      if (!same(valueAt(live, p), valueAt(applied, p))) {
        conflicts.push({ manager: e.manager, operation: e.operation, apiVersion: e.apiVersion, path: p });
        if (!taken.has(e)) taken.set(e, new FieldSet());
        taken.get(e)!.add(p);
      }
    }
  }
  if (conflicts.length > 0 && !opts.force) return { conflicts };
  const merged = mergeApplied(live, applied) as JsonObject;
  // Everyone else's fields after a forced apply took the conflicting ones.
  const others = managed.filter((e) => !sameEntry(e, opts.manager, "Apply", "")).map((e) => ({ e, set: entrySet(e).minus(taken.get(e) ?? new FieldSet()) }));
  const prev = managed.find((e) => sameEntry(e, opts.manager, "Apply", ""));
  if (prev) {
    const ownedByOthers = others.reduce((acc, o) => acc.union(o.set), new FieldSet());
    const dropped = entrySet(prev).minus(appliedSet).minus(ownedByOthers);
    // Outermost first: a dropped list item goes whole (its key fields with it).
    const gone: string[][] = [];
    for (const p of dropped.members()) {
      if (gone.some((g) => g.every((k, i) => p[i] === k))) continue;
      removeAt(merged, p);
      gone.push(p);
    }
  }
  const out: ManagedEntry[] = [];
  let placed = false;
  for (const e of managed) {
    if (sameEntry(e, opts.manager, "Apply", "")) {
      out.push(withSet(e, appliedSet, opts.now));
      placed = true;
      continue;
    }
    const set = others.find((o) => o.e === e)!.set;
    if (!set.empty) out.push(withSet(e, set, opts.now));
  }
  if (!placed) out.push(newEntry(opts.manager, "Apply", opts.apiVersion, "", appliedSet, opts.now));
  return { object: merged, managedFields: out };
}

/**
 * Kubernetes' 409 message: `Apply failed with 1 conflict: conflict with
 * "kubectl-scale" using v1: .spec.replicas`; several are grouped by manager.
 */
export function conflictMessage(conflicts: readonly Conflict[]): string {
  if (conflicts.length === 1) return `Apply failed with 1 conflict: conflict with ${printManager(conflicts[0]!)}: ${pathString(conflicts[0]!.path)}`;
  const by = new Map<string, string[]>();
  for (const c of conflicts) {
    const m = printManager(c);
    by.set(m, [...(by.get(m) ?? []), `- ${pathString(c.path)}`]);
  }
  const lines = [...by.keys()].sort().flatMap((m) => [`conflicts with ${m}:`, ...by.get(m)!]);
  return `Apply failed with ${conflicts.length} conflicts: ${lines.join("\n")}`;
}
