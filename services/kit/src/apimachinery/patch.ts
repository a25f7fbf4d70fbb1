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

/** RFC 7386 JSON merge patch; inputs are not changed. */
export function applyMergePatch(target: JsonValue, patch: JsonValue): JsonValue {
  assertSafe(patch);
  return merge(target, patch);
}

function merge(target: JsonValue, patch: JsonValue): JsonValue {
  if (!isObject(patch)) return clone(patch);
  const out: JsonObject = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = merge(out[k] ?? null, v);
  }
  return out;
}

// ---- RFC 6902 -----------------------------------------------------------

function pointer(path: string): string[] {
  if (path === "") return [];
  if (!path.startsWith("/")) throw new PatchError(`invalid JSON pointer: ${JSON.stringify(path)}`);
  return path.slice(1).split("/").map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function parentOf(doc: JsonValue, parts: string[], path: string): { parent: JsonObject | JsonValue[]; key: string } {
  let cur: JsonValue = doc;
  for (const p of parts.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(p)] as JsonValue;
    else if (isObject(cur) && p in cur) cur = cur[p] as JsonValue;
    else throw new PatchError(`path not found: ${path}`);
    if (cur === undefined) throw new PatchError(`path not found: ${path}`);
  }
  if (!Array.isArray(cur) && !isObject(cur)) throw new PatchError(`path not found: ${path}`);
  return { parent: cur, key: parts[parts.length - 1] as string };
}

function index(arr: JsonValue[], key: string, path: string, forAdd: boolean): number {
  if (forAdd && key === "-") return arr.length;
  if (!/^(0|[1-9]\d*)$/.test(key)) throw new PatchError(`invalid array index ${JSON.stringify(key)} in ${path}`);
  const i = Number(key);
  if (i > arr.length || (!forAdd && i === arr.length)) throw new PatchError(`array index out of bounds in ${path}`);
  return i;
}

function get(doc: JsonValue, path: string): JsonValue {
  let cur: JsonValue = doc;
  for (const p of pointer(path)) {
    if (Array.isArray(cur)) cur = cur[index(cur, p, path, false)] as JsonValue;
    else if (isObject(cur) && p in cur) cur = cur[p] as JsonValue;
    else throw new PatchError(`path not found: ${path}`);
  }
  return cur;
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
  else if (key in parent) delete parent[key];
  else throw new PatchError(`path not found: ${path}`);
  return doc;
}

/** RFC 6902 JSON patch (add, remove, replace, move, copy, test); inputs are not changed. */
export function applyJsonPatch(target: JsonValue, ops: JsonValue): JsonValue {
  if (!Array.isArray(ops)) throw new PatchError("a JSON patch must be an array of operations");
  assertSafe(ops);
  for (const op of ops) if (isObject(op) && typeof op["path"] === "string" && op["path"].split("/").includes("__proto__")) throw new PatchError('the key "__proto__" is not allowed');
  let doc = clone(target);
  for (const raw of ops) {
    if (!isObject(raw) || typeof raw["op"] !== "string" || typeof raw["path"] !== "string") throw new PatchError("each operation needs an op and a path");
    const path = raw["path"];
    const from = typeof raw["from"] === "string" ? raw["from"] : undefined;
    const value = raw["value"];
    switch (raw["op"]) {
      case "add":
        if (value === undefined) throw new PatchError(`add at ${path} needs a value`);
        doc = add(doc, path, clone(value));
        break;
      case "remove":
        doc = remove(doc, path);
        break;
      case "replace":
        if (value === undefined) throw new PatchError(`replace at ${path} needs a value`);
        get(doc, path);
        doc = add(remove(doc, path), path, clone(value));
        if (pointer(path).length === 0) doc = clone(value);
        break;
      case "move": {
        if (from === undefined) throw new PatchError("move needs from");
        const v = get(doc, from);
        doc = add(remove(doc, from), path, v);
        break;
      }
      case "copy": {
        if (from === undefined) throw new PatchError("copy needs from");
        doc = add(doc, path, clone(get(doc, from)));
        break;
      }
      case "test":
        if (JSON.stringify(canon(get(doc, path))) !== JSON.stringify(canon(value ?? null))) throw new PatchError(`test operation failed at ${path}`);
        break;
      default:
        throw new PatchError(`unknown operation ${JSON.stringify(raw["op"])}`);
    }
  }
  return doc;
}

function canon(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(canon);
  if (isObject(v)) return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k] as JsonValue)]));
  return v;
}

// ---- strategic merge patch (the subset kubectl sends) --------------------

/** Which lists merge by key, by path of object keys from the root. */
export interface StrategicSchema {
  mergeKey(path: readonly string[]): string | undefined;
}

/** Kubernetes' merge keys for the kinds choreo serves. */
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
        // container ports by containerPort; service ports (spec.ports) by port
        return prev === "spec" && path.length === 2 ? "port" : "containerPort";
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
      default:
        return undefined;
    }
  },
};

/** Applies a strategic merge patch; inputs are not changed. */
export function applyStrategicMergePatch(target: JsonValue, patch: JsonValue, schema: StrategicSchema): JsonValue {
  assertSafe(patch);
  return smp(clone(target), patch, schema, []);
}

function smp(target: JsonValue, patch: JsonValue, schema: StrategicSchema, path: string[]): JsonValue {
  if (!isObject(patch)) return clone(patch);
  if (patch["$patch"] === "replace") return stripDirectives(patch);
  if (patch["$patch"] === "delete") return null;
  const out: JsonObject = isObject(target) ? target : {};
  const retain = patch["$retainKeys"];
  for (const [k, v] of Object.entries(patch)) {
    // Directives ($patch, $retainKeys, $setElementOrder/…, …) are never stored.
    if (k.startsWith("$")) continue;
    if (v === null) {
      delete out[k];
      continue;
    }
    const sub = [...path, k];
    const key = schema.mergeKey(sub);
    if (Array.isArray(v) && key && Array.isArray(out[k])) {
      out[k] = mergeList(out[k] as JsonValue[], v, key, schema, sub);
    } else if (Array.isArray(v)) {
      out[k] = v.filter((e) => !(isObject(e) && e["$patch"] === "delete")).map((e) => (isObject(e) ? stripDirectives(e) : e));
    } else if (isObject(v)) {
      const merged = smp(out[k] ?? null, v, schema, sub);
      if (merged === null) delete out[k];
      else out[k] = merged;
    } else {
      out[k] = v;
    }
  }
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith("$deleteFromPrimitiveList/")) {
      const name = k.slice("$deleteFromPrimitiveList/".length);
      const drop = new Set((Array.isArray(v) ? v : []).map((x) => JSON.stringify(x)));
      if (Array.isArray(out[name])) out[name] = (out[name] as JsonValue[]).filter((x) => !drop.has(JSON.stringify(x)));
    }
  }
  for (const [k, v] of Object.entries(patch)) {
    if (!k.startsWith("$setElementOrder/") || !Array.isArray(v)) continue;
    const name = k.slice("$setElementOrder/".length);
    const list = out[name];
    if (!Array.isArray(list)) continue;
    const key = schema.mergeKey([...path, name]);
    const id = (e: JsonValue): string => JSON.stringify(key && isObject(e) ? e[key] : e);
    const order = new Map(v.map((e, i) => [id(e), i]));
    const listed = list.filter((e) => order.has(id(e))).sort((a, b) => (order.get(id(a)) ?? 0) - (order.get(id(b)) ?? 0));
    out[name] = [...listed, ...list.filter((e) => !order.has(id(e)))];
  }
  if (Array.isArray(retain)) {
    const keep = new Set(retain.map(String));
    for (const k of Object.keys(out)) if (!keep.has(k)) delete out[k];
  }
  return out;
}

function mergeList(target: JsonValue[], patch: JsonValue[], key: string, schema: StrategicSchema, path: string[]): JsonValue[] {
  const out = [...target];
  for (const e of patch) {
    if (!isObject(e)) {
      out.push(e);
      continue;
    }
    const i = out.findIndex((t) => isObject(t) && JSON.stringify(t[key]) === JSON.stringify(e[key]));
    if (e["$patch"] === "delete") {
      if (i >= 0) out.splice(i, 1);
    } else if (i >= 0) {
      out[i] = smp(out[i] as JsonValue, e, schema, path);
    } else {
      out.push(stripDirectives(e));
    }
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
