import { badRequest } from "../api/errors.js";
import { kindByApiVersionKind, kindByCase, wrap, type KindCase, type KindInfo, type KindValue } from "../api/kinds.js";
import type { Object as ApiObject, ObjectList, WatchEvent } from "../gen/choreo/api/v1/api.js";
import type { Status } from "../gen/choreo/meta/v1/meta.js";
import { planOf, zeroOf, type FieldPlan, type MessagePlan } from "./schema.js";

/** A Kubernetes JSON object. */
export type KubeJson = Record<string, unknown>;

/** Options of the decoder. */
export interface DecodeOptions {
  /** Reject unknown fields (Kubernetes' fieldValidation=Strict). Default true. */
  strict?: boolean;
  /**
   * When given, unknown field paths (`spec.foo`, `spec.containers[0].bar`)
   * are pushed here and dropped instead of failing the decode: the caller
   * decides (fieldValidation Warn/Strict). Overrides `strict`.
   */
  unknownFields?: string[];
}

// Resource maps hold quantities; YAML gives `cpu: 1` as a number.
const QUANTITY_MAPS = new Set(["limits", "requests", "capacity", "allocatable"]);

// ---- encode: ts-proto value → Kubernetes JSON ------------------------------

function encodeValue(fp: FieldPlan, v: unknown): unknown {
  if (fp.message) return encodeMessage(fp.message, v as Record<string, unknown>);
  // Go's encoding/json writes []byte as standard base64.
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
  return v;
}

/** Standard base64 as Go decodes []byte (padding required, \r and \n ignored); 400 naming the first bad byte. */
function decodeBase64(s: string): Uint8Array {
  const text = s.replace(/[\r\n]/g, "");
  const bad = text.search(/[^A-Za-z0-9+/=]|=[^=]|={3}/);
  if (bad >= 0 || text.length % 4 !== 0) throw badRequest(`illegal base64 data at input byte ${bad >= 0 ? bad : text.length - (text.length % 4)}`);
  return new Uint8Array(Buffer.from(text, "base64"));
}

function encodeMessage(plan: MessagePlan, msg: Record<string, unknown>): unknown {
  if (plan.rawJson) {
    const raw = msg["raw"] as Uint8Array | undefined;
    return raw && raw.length > 0 ? (JSON.parse(Buffer.from(raw).toString("utf8")) as unknown) : {};
  }
  if (plan.intOrString) {
    const one = msg["value"] as { $case: string; value: number | string } | undefined;
    // Go's zero IntOrString (type Int, intVal 0) marshals as 0.
    return one?.value ?? 0;
  }
  const out: KubeJson = {};
  for (const fp of plan.fields) {
    let v = msg[fp.tsName];
    if (v === undefined || v === null) {
      if (!fp.always) continue;
      // Kubernetes writes it anyway (no omitempty): the zero value.
      v = fp.kind === "map" || fp.kind === "message" ? {} : fp.kind === "repeated" ? [] : zeroOf(fp.scalar);
    }
    switch (fp.kind) {
      case "map": {
        const entries = Object.entries(v as Record<string, unknown>);
        if (entries.length === 0 && !fp.always) continue;
        const m: KubeJson = {};
        for (const [k, x] of entries) m[k] = encodeValue(fp, x);
        out[fp.jsonName] = m;
        break;
      }
      case "repeated": {
        const arr = v as unknown[];
        if (arr.length === 0 && !fp.always) continue;
        out[fp.jsonName] = arr.map((x) => encodeValue(fp, x));
        break;
      }
      case "message":
        out[fp.jsonName] = encodeMessage(fp.message as MessagePlan, v as Record<string, unknown>);
        break;
      default:
        if (!fp.optional && !fp.always && (v === zeroOf(fp.scalar) || (v instanceof Uint8Array && v.length === 0))) continue;
        out[fp.jsonName] = encodeValue(fp, v);
    }
  }
  return out;
}

/** Any generated message (by full proto name) as Kubernetes JSON. */
export function messageToKubeJson(protoType: string, msg: object): KubeJson {
  return encodeMessage(planOf(protoType), msg as Record<string, unknown>) as KubeJson;
}

/** An object as Kubernetes JSON, apiVersion and kind filled in. */
export function toKubeJson(o: ApiObject): KubeJson {
  if (!o.kind) throw new Error("empty object");
  const info = kindByCase(o.kind.$case);
  const body = messageToKubeJson(info.protoType, o.kind.value);
  return { apiVersion: info.apiVersion, kind: info.kind, ...body, ...(body["metadata"] ? {} : { metadata: {} }) };
}

/** A list as `PodList` etc. */
export function listToKubeJson(info: KindInfo, list: ObjectList): KubeJson {
  const meta: KubeJson = { resourceVersion: list.metadata?.resourceVersion ?? "" };
  if (list.metadata?.continue) meta["continue"] = list.metadata.continue;
  if (list.metadata?.remainingItemCount !== undefined) meta["remainingItemCount"] = list.metadata.remainingItemCount;
  return { kind: `${info.kind}List`, apiVersion: info.apiVersion, metadata: meta, items: list.items.map(toKubeJson) };
}

/** A Status as Kubernetes JSON (`metadata: {}` always present, like the apiserver). */
export function statusToKubeJson(s: Status): KubeJson {
  const { kind: _k, apiVersion: _v, metadata: _m, ...body } = messageToKubeJson("choreo.meta.v1.Status", s);
  return { kind: "Status", apiVersion: "v1", metadata: {}, ...body };
}

/** A watch event line: `{"type":"ADDED","object":{…}}`. */
export function watchEventToKubeJson(ev: WatchEvent): { type: string; object: unknown } {
  if (ev.type === "ERROR" && ev.status) return { type: "ERROR", object: statusToKubeJson(ev.status) };
  if (ev.object) return { type: ev.type, object: toKubeJson(ev.object) };
  return { type: ev.type, object: {} };
}

// ---- decode: Kubernetes JSON → ts-proto value ------------------------------

class Decoder {
  constructor(
    readonly strict: boolean,
    readonly unknown: string[] = [],
  ) {}

  typeName(v: unknown): string {
    if (v === null) return "null";
    if (Array.isArray(v)) return "array";
    return typeof v === "object" ? "object" : typeof v;
  }

  fail(v: unknown, plan: MessagePlan | undefined, path: string, want: string): never {
    const where = plan ? `Go struct field ${plan.name}.${path}` : "Go value";
    throw badRequest(`json: cannot unmarshal ${this.typeName(v)} into ${where} of type ${want}`);
  }

  scalar(fp: FieldPlan, v: unknown, owner: MessagePlan, path: string, quantity: boolean): unknown {
    const t = fp.scalar ?? "string";
    if (t === "string") {
      if (typeof v === "string") return v;
      if (quantity && typeof v === "number" && Number.isFinite(v)) return String(v);
      return this.fail(v, owner, path, "string");
    }
    if (t === "bytes") return typeof v === "string" ? decodeBase64(v) : this.fail(v, owner, path, "[]uint8");
    if (t === "bool") return typeof v === "boolean" ? v : this.fail(v, owner, path, "bool");
    if (t === "double" || t === "float") return typeof v === "number" ? v : this.fail(v, owner, path, "float64");
    if (typeof v !== "number" || !Number.isInteger(v)) return this.fail(v, owner, path, t);
    if (t === "int32" && (v > 2147483647 || v < -2147483648)) return this.fail(v, owner, path, t);
    return v;
  }

  element(fp: FieldPlan, v: unknown, owner: MessagePlan, path: string, quantity = false): unknown {
    if (fp.message) return this.message(fp.message, v, path);
    return this.scalar(fp, v, owner, path, quantity);
  }

  message(plan: MessagePlan, json: unknown, path: string): Record<string, unknown> {
    if (plan.rawJson) {
      if (typeof json !== "object" || json === null || Array.isArray(json)) return this.fail(json, undefined, path, "v1.FieldsV1");
      return { raw: new Uint8Array(Buffer.from(JSON.stringify(json))) };
    }
    if (plan.intOrString) {
      if (typeof json === "number" && Number.isInteger(json)) return { value: { $case: "intVal", value: json } };
      if (typeof json === "string") return { value: { $case: "strVal", value: json } };
      return this.fail(json, undefined, path, "intstr.IntOrString");
    }
    if (typeof json !== "object" || json === null || Array.isArray(json)) return this.fail(json, undefined, path, plan.name);
    const out: Record<string, unknown> = {};
    for (const fp of plan.fields) {
      if (fp.kind === "map") out[fp.tsName] = {};
      else if (fp.kind === "repeated") out[fp.tsName] = [];
      else if (fp.kind === "scalar" && !fp.optional) out[fp.tsName] = fp.scalar === "bytes" ? new Uint8Array(0) : zeroOf(fp.scalar);
    }
    for (const [key, v] of Object.entries(json as Record<string, unknown>)) {
      const fp = plan.byJson.get(key);
      const p = path ? `${path}.${key}` : key;
      if (!fp) {
        if (this.strict) this.unknown.push(p);
        continue;
      }
      if (v === null || v === undefined) continue;
      switch (fp.kind) {
        case "map": {
          if (typeof v !== "object" || Array.isArray(v)) this.fail(v, plan, p, "map[string]string");
          const m: Record<string, unknown> = {};
          const quantity = QUANTITY_MAPS.has(key);
          for (const [k, x] of Object.entries(v as Record<string, unknown>)) m[k] = this.element(fp, x, plan, p, quantity);
          out[fp.tsName] = m;
          break;
        }
        case "repeated":
          if (!Array.isArray(v)) this.fail(v, plan, p, `[]${fp.message?.name ?? fp.scalar ?? ""}`);
          out[fp.tsName] = (v as unknown[]).map((x, i) => this.element(fp, x, plan, `${p}[${i}]`));
          break;
        default:
          out[fp.tsName] = this.element(fp, v, plan, p);
      }
    }
    return out;
  }

  finish(): void {
    if (this.unknown.length === 1) throw badRequest(`strict decoding error: unknown field "${this.unknown[0]}"`);
    if (this.unknown.length > 1) throw badRequest(`strict decoding error: ${this.unknown.map((u) => `unknown field "${u}"`).join(", ")}`);
  }
}

/** Decodes any generated message (by full proto name) from Kubernetes JSON; 400 on bad input. */
export function messageFromKubeJson<T>(protoType: string, json: unknown, opts: DecodeOptions = {}): T {
  const d = new Decoder(opts.unknownFields !== undefined || (opts.strict ?? true), opts.unknownFields);
  const plan = planOf(protoType);
  const top = typeof json === "object" && json !== null && !Array.isArray(json) ? { ...(json as KubeJson) } : json;
  // apiVersion/kind are envelope fields on every top-level message.
  if (typeof top === "object" && top !== null && !plan.byJson.has("kind")) {
    delete (top as KubeJson)["apiVersion"];
    delete (top as KubeJson)["kind"];
  }
  const msg = d.message(plan, top, "");
  if (opts.unknownFields === undefined) d.finish();
  return msg as T;
}

/** The kind a Kubernetes JSON document declares; 400 when missing or unknown. */
export function kindOfKubeJson(json: unknown): KindInfo {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw badRequest(`Object 'Kind' is missing in '${JSON.stringify(json)?.slice(0, 200)}'`);
  }
  const { apiVersion, kind } = json as KubeJson;
  if (typeof kind !== "string" || kind === "") throw badRequest(`Object 'Kind' is missing in '${JSON.stringify(json).slice(0, 200)}'`);
  if (typeof apiVersion !== "string" || apiVersion === "") throw badRequest(`Object 'apiVersion' is missing in '${JSON.stringify(json).slice(0, 200)}'`);
  const info = kindByApiVersionKind(apiVersion, kind);
  if (!info) {
    const [group, version] = apiVersion.includes("/") ? apiVersion.split("/", 2) : ["", apiVersion];
    throw badRequest(`no kind "${kind}" is registered for version "${apiVersion}" in scheme "choreo" (group "${group}", version "${version}")`);
  }
  return info;
}

/** An object from Kubernetes JSON; 400 BadRequest for unknown kinds, unknown fields, wrong types. */
export function fromKubeJson(json: unknown, opts: DecodeOptions = {}): ApiObject {
  const info = kindOfKubeJson(json);
  const value = messageFromKubeJson<KindValue<KindCase>>(info.protoType, json, opts);
  value.apiVersion = info.apiVersion;
  value.kind = info.kind;
  return wrap(info.case, value);
}
