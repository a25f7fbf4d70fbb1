/** Any JSON value. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
type JsonObject = { [key: string]: JsonValue };

/** A patch could not be applied. */
export class PatchError extends Error {
  override name = "PatchError";
}

const isObject = (v: unknown): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);
const clone = <T extends JsonValue>(v: T): T => structuredClone(v);

/** Refuses keys that would reach an object's prototype. */
function assertSafe(v: JsonValue): void {
  if (Array.isArray(v)) v.forEach(assertSafe);
  else if (isObject(v)) {
    for (const k of Object.keys(v)) {
      if (k === "__proto__") throw new PatchError('the key "__proto__" is not allowed');
      assertSafe(v[k] as JsonValue);
    }
  }
}

/** RFC 7386 JSON merge patch: objects merge recursively, null deletes, anything else replaces. Inputs are not changed. */
export function applyMergePatch(target: JsonValue, patch: JsonValue): JsonValue {
  assertSafe(patch);
  return merge(clone(target), patch);
}

/** Merges into `target`, which the caller owns (cloned once up front). */
function merge(target: JsonValue, patch: JsonValue): JsonValue {
  if (!isObject(patch)) return clone(patch);
  const out: JsonObject = isObject(target) ? target : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = merge(Object.hasOwn(out, k) ? (out[k] as JsonValue) : null, v);
  }
  return out;
}

// ---- RFC 6902 -----------------------------------------------------------

/** One RFC 6902 operation. */
export interface JsonPatchOperation {
  readonly op: "add" | "remove" | "replace" | "move" | "copy" | "test";
  readonly path: string;
  readonly from?: string;
  readonly value?: JsonValue;
}

/** RFC 6901: `/a/b~1c~0d` → ["a", "b/c~d"]. */
function pointer(path: string): string[] {
  if (path === "") return [];
  if (!path.startsWith("/")) throw new PatchError(`invalid JSON pointer: ${JSON.stringify(path)}`);
  return path
    .slice(1)
    .split("/")
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function index(arr: readonly JsonValue[], key: string, path: string, forAdd: boolean): number {
  if (forAdd && key === "-") return arr.length;
  if (!/^(0|[1-9]\d*)$/.test(key)) throw new PatchError(`invalid array index ${JSON.stringify(key)} in ${path}`);
  const i = Number(key);
  if (i > arr.length || (!forAdd && i === arr.length)) throw new PatchError(`array index out of bounds: ${path}`);
  return i;
}

function child(cur: JsonValue, key: string, path: string): JsonValue {
  if (Array.isArray(cur)) return cur[index(cur, key, path, false)] as JsonValue;
  if (isObject(cur) && Object.hasOwn(cur, key)) return cur[key] as JsonValue;
  throw new PatchError(`path not found: ${path}`);
}

function get(doc: JsonValue, path: string): JsonValue {
  let cur = doc;
  for (const p of pointer(path)) cur = child(cur, p, path);
  return cur;
}

function parentOf(doc: JsonValue, parts: readonly string[], path: string): { parent: JsonObject | JsonValue[]; key: string } {
  let cur = doc;
  for (const p of parts.slice(0, -1)) cur = child(cur, p, path);
  if (!Array.isArray(cur) && !isObject(cur)) throw new PatchError(`path not found: ${path}`);
  return { parent: cur, key: parts[parts.length - 1] as string };
}

function add(doc: JsonValue, path: string, value: JsonValue): JsonValue {
  const parts = pointer(path);
  if (parts.length === 0) return value;
  const { parent, key } = parentOf(doc, parts, path);
  if (Array.isArray(parent)) parent.splice(index(parent, key, path, true), 0, value);
  else parent[key] = value;
  return doc;
}

function remove(doc: JsonValue, path: string): JsonValue {
  const parts = pointer(path);
  if (parts.length === 0) throw new PatchError("cannot remove the whole document");
  const { parent, key } = parentOf(doc, parts, path);
  if (Array.isArray(parent)) parent.splice(index(parent, key, path, false), 1);
  else if (Object.hasOwn(parent, key)) delete parent[key];
  else throw new PatchError(`path not found: ${path}`);
  return doc;
}

function replace(doc: JsonValue, path: string, value: JsonValue): JsonValue {
  const parts = pointer(path);
  if (parts.length === 0) return value;
  get(doc, path); // must exist
  const { parent, key } = parentOf(doc, parts, path);
  if (Array.isArray(parent)) parent[index(parent, key, path, false)] = value;
  else parent[key] = value;
  return doc;
}

function canon(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(canon);
  if (isObject(v))
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canon(v[k] as JsonValue)]),
    );
  return v;
}

const deepEqual = (a: JsonValue, b: JsonValue): boolean => JSON.stringify(canon(a)) === JSON.stringify(canon(b));

/**
 * RFC 6902 JSON patch (add, remove, replace, move, copy, test); inputs are not
 * changed. `ops` is usually the parsed request body, so it is checked here.
 */
export function applyJsonPatch(target: JsonValue, ops: JsonValue | readonly JsonPatchOperation[]): JsonValue {
  if (!Array.isArray(ops)) throw new PatchError("a JSON patch must be an array of operations");
  // Operations are plain JSON; widen once and check every field below.
  const list = ops as readonly JsonValue[];
  assertSafe(list as JsonValue);
  let doc = clone(target);
  for (const raw of list) {
    if (!isObject(raw) || typeof raw["op"] !== "string" || typeof raw["path"] !== "string") throw new PatchError("each operation needs an op and a path");
    const path = raw["path"];
    const from = typeof raw["from"] === "string" ? raw["from"] : undefined;
    for (const p of [path, from]) if (p !== undefined && pointer(p).includes("__proto__")) throw new PatchError('the key "__proto__" is not allowed');
    const value = raw["value"];
    const needValue = (): JsonValue => {
      if (value === undefined) throw new PatchError(`${raw["op"] as string} at ${path} needs a value`);
      return clone(value);
    };
    const needFrom = (): string => {
      if (from === undefined) throw new PatchError(`${raw["op"] as string} at ${path} needs from`);
      return from;
    };
    switch (raw["op"]) {
      case "add":
        doc = add(doc, path, needValue());
        break;
      case "remove":
        doc = remove(doc, path);
        break;
      case "replace":
        doc = replace(doc, path, needValue());
        break;
      case "move": {
        const src = needFrom();
        const v = get(doc, src);
        if (src === path) break;
        if (path.startsWith(`${src}/`)) throw new PatchError(`cannot move ${src} into its own child ${path}`);
        doc = add(remove(doc, src), path, v);
        break;
      }
      case "copy":
        doc = add(doc, path, clone(get(doc, needFrom())));
        break;
      case "test":
        if (!deepEqual(get(doc, path), needValue())) throw new PatchError(`test operation failed: ${path}`);
        break;
      default:
        throw new PatchError(`unknown operation ${JSON.stringify(raw["op"])}`);
    }
  }
  return doc;
}

// ---- strategic merge patch (the subset kubectl sends) --------------------

/** Which lists merge, by path of object keys from the root (array indexes omitted). */
export interface StrategicSchema {
  /** The merge key of a list of objects (`name` for containers); undefined: the list is replaced. */
  mergeKey(path: readonly string[]): string | undefined;
  /** Lists of primitives merged as sets (e.g. `metadata.finalizers`); absent: none. */
  mergesPrimitives?(path: readonly string[]): boolean;
}

const CONTAINER_LISTS: ReadonlySet<string | undefined> = new Set(["containers", "initContainers", "ephemeralContainers"]);

/** Kubernetes' merge keys (patchMergeKey tags) for Pod, RC, DaemonSet, Job, Service and Node shapes. */
export const kubeStrategicSchema: StrategicSchema = {
  mergeKey(path) {
    const last = path[path.length - 1];
    const prev = path[path.length - 2];
    switch (last) {
      case "containers":
      case "initContainers":
      case "ephemeralContainers":
      case "env":
      case "volumes":
      case "imagePullSecrets":
        return "name";
      case "ports":
        // container ports by containerPort; a Service's spec.ports by port; others (Endpoints) replace
        if (CONTAINER_LISTS.has(prev)) return "containerPort";
        return prev === "spec" && path.length === 2 ? "port" : undefined;
      case "volumeMounts":
        return "mountPath";
      case "volumeDevices":
        return "devicePath";
      case "conditions":
        return "type";
      case "ownerReferences":
        return "uid";
      case "addresses":
        return prev === "status" ? "type" : undefined;
      case "hostAliases":
        return "ip";
      case "topologySpreadConstraints":
        return "topologyKey";
      default:
        return undefined;
    }
  },
  mergesPrimitives(path) {
    return path[path.length - 1] === "finalizers" && path[path.length - 2] === "metadata";
  },
};

/**
 * Applies a strategic merge patch; inputs are not changed. Maps merge and
 * `null` deletes; keyed lists merge by their key; other lists are replaced.
 * Directives: `$patch` (delete/replace/merge), `$setElementOrder/<list>`,
 * `$retainKeys`, `$deleteFromPrimitiveList/<list>`; none is ever stored.
 */
export function applyStrategicMergePatch(target: JsonValue, patch: JsonValue, schema: StrategicSchema): JsonValue {
  assertSafe(patch);
  return smp(clone(target), patch, schema, []);
}

/** Merges `patch` into `target` (owned, changed in place); null means "delete me". */
function smp(target: JsonValue, patch: JsonValue, schema: StrategicSchema, path: string[]): JsonValue {
  if (!isObject(patch)) return stripDirectives(patch);
  if (patch["$patch"] === "replace") return stripDirectives(patch);
  if (patch["$patch"] === "delete") return null;
  const out: JsonObject = isObject(target) ? target : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith("$")) continue; // directives are handled below, never stored
    if (v === null) {
      delete out[k];
      continue;
    }
    const sub = [...path, k];
    if (Array.isArray(v)) {
      const key = schema.mergeKey(sub);
      const prims = schema.mergesPrimitives?.(sub) ?? false;
      const current = Array.isArray(out[k]) ? (out[k] as JsonValue[]) : [];
      out[k] = key !== undefined || prims ? mergeList(current, v, key, schema, sub) : replacedList(v);
    } else if (isObject(v)) {
      const merged = smp(Object.hasOwn(out, k) ? (out[k] as JsonValue) : null, v, schema, sub);
      if (merged === null) delete out[k];
      else out[k] = merged;
    } else {
      out[k] = v;
    }
  }
  for (const [k, v] of Object.entries(patch)) {
    if (!k.startsWith("$deleteFromPrimitiveList/")) continue;
    const name = k.slice("$deleteFromPrimitiveList/".length);
    const drop = new Set((Array.isArray(v) ? v : []).map((x) => JSON.stringify(x)));
    if (Array.isArray(out[name])) out[name] = (out[name] as JsonValue[]).filter((x) => !drop.has(JSON.stringify(x)));
  }
  for (const [k, v] of Object.entries(patch)) {
    if (!k.startsWith("$setElementOrder/") || !Array.isArray(v)) continue;
    const name = k.slice("$setElementOrder/".length);
    const list = out[name];
    if (!Array.isArray(list)) continue;
    const key = schema.mergeKey([...path, name]);
    const id = (e: JsonValue): string => JSON.stringify(key !== undefined && isObject(e) ? (e[key] ?? null) : e);
    const order = new Map(v.map((e, i) => [id(e), i]));
    const listed = list.filter((e) => order.has(id(e))).sort((a, b) => (order.get(id(a)) ?? 0) - (order.get(id(b)) ?? 0));
    out[name] = [...listed, ...list.filter((e) => !order.has(id(e)))];
  }
  const retain = patch["$retainKeys"];
  if (Array.isArray(retain)) {
    const keep = new Set(retain.map(String));
    for (const k of Object.keys(out)) if (!keep.has(k)) delete out[k];
  }
  return out;
}

const isDirectiveOnly = (e: JsonValue, directive: string): boolean => isObject(e) && e["$patch"] === directive;

/** A list that replaces the old one: directive elements dropped, `$` keys stripped. */
function replacedList(patch: readonly JsonValue[]): JsonValue[] {
  return patch.filter((e) => !isObject(e) || e["$patch"] === undefined).map(stripDirectives);
}

function mergeList(target: JsonValue[], patch: readonly JsonValue[], key: string | undefined, schema: StrategicSchema, path: string[]): JsonValue[] {
  // `[{"$patch": "replace"}, …]` replaces the whole list.
  if (patch.some((e) => isDirectiveOnly(e, "replace"))) return replacedList(patch);
  const out = [...target];
  const same = (a: JsonValue, b: JsonValue): boolean => JSON.stringify(a) === JSON.stringify(b);
  for (const e of patch) {
    if (!isObject(e)) {
      if (!out.some((t) => same(t, e))) out.push(e);
      continue;
    }
    if (key === undefined || !Object.hasOwn(e, key)) {
      throw new PatchError(`map: ${JSON.stringify(e)} does not contain declared merge key: ${key ?? "(none)"} at ${path.join(".")}`);
    }
    const matches = (t: JsonValue): boolean => isObject(t) && same(t[key] ?? null, e[key] as JsonValue);
    if (e["$patch"] === "delete") {
      for (let i = out.length - 1; i >= 0; i--) if (matches(out[i] as JsonValue)) out.splice(i, 1);
      continue;
    }
    const i = out.findIndex(matches);
    if (i >= 0) out[i] = smp(out[i] as JsonValue, e, schema, path);
    else out.push(stripDirectives(e));
  }
  return out;
}

function stripDirectives(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(stripDirectives);
  if (!isObject(v)) return v;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) if (!k.startsWith("$")) out[k] = stripDirectives(x);
  return out;
}
