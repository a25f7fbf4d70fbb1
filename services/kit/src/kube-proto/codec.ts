// Kubernetes protobuf message bytes ⇄ Kubernetes JSON, walking the
// descriptor of proto/k8s (gen/k8s-descriptor.json) with plans built once.
import { createRequire } from "node:module";
import protobuf from "protobufjs";
import { badRequest } from "../api/errors.js";

/** A Kubernetes JSON object. */
export type KubeJson = Record<string, unknown>;

const require = createRequire(import.meta.url);
const root = protobuf.Root.fromJSON(require("../gen/k8s-descriptor.json") as protobuf.INamespace);
root.resolveAll();

const META = "k8s.io.apimachinery.pkg.apis.meta.v1";

/** Messages with a JSON form of their own (Go's custom marshallers). */
type Special = "time" | "microTime" | "duration" | "quantity" | "intOrString" | "fieldsV1" | "rawExtension" | "stringList";
const SPECIALS: Record<string, Special> = {
  [`${META}.Time`]: "time",
  [`${META}.MicroTime`]: "microTime",
  [`${META}.Duration`]: "duration",
  [`${META}.FieldsV1`]: "fieldsV1",
  "k8s.io.apimachinery.pkg.api.resource.Quantity": "quantity",
  "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "intOrString",
  "k8s.io.apimachinery.pkg.runtime.RawExtension": "rawExtension",
  // `type ExtraValue []string`: a message of `items` in protobuf, a bare array in JSON.
  "k8s.io.api.authorization.v1.ExtraValue": "stringList",
  "k8s.io.api.authentication.v1.ExtraValue": "stringList",
};

// Go structs embedded with `json:",inline"`: a field in protobuf, flattened into the parent in JSON.
const CORE = "k8s.io.api.core.v1";
const INLINE = new Set([
  `${CORE}.Volume.volumeSource`,
  `${CORE}.PersistentVolumeSpec.persistentVolumeSource`,
  `${CORE}.Probe.handler`,
  `${CORE}.EphemeralContainer.ephemeralContainerCommon`,
  ...[
    "ConfigMapEnvSource",
    "ConfigMapKeySelector",
    "ConfigMapProjection",
    "ConfigMapVolumeSource",
    "SecretEnvSource",
    "SecretKeySelector",
    "SecretProjection",
  ].map((m) => `${CORE}.${m}.localObjectReference`),
]);

interface FieldPlan {
  readonly name: string;
  /** Embedded inline: its fields sit in the parent's JSON object. */
  readonly inline: boolean;
  readonly id: number;
  readonly repeated: boolean;
  /** Key scalar type of a map field. */
  readonly mapKey?: string;
  /** Scalar type of the value (or element, or map value); undefined for messages. */
  readonly scalar?: string;
  /** Message type of the value (or element, or map value). */
  readonly message?: () => MessagePlan;
}

/** How one Kubernetes message is walked. */
export interface MessagePlan {
  readonly fullName: string;
  /** Fields in field-number order (Go's marshalling order). */
  readonly fields: FieldPlan[];
  readonly byId: Map<number, FieldPlan>;
  readonly byName: Map<string, FieldPlan>;
  readonly inlineFields: FieldPlan[];
  /** Fields by number (sparse). */
  readonly byNumber: (FieldPlan | undefined)[];
  /** Every JSON name the message's object may hold (its fields', and its inline fields' names). */
  readonly jsonNames: () => Set<string>;
  readonly special?: Special;
}

const plans = new Map<string, MessagePlan>();

/** A lazily computed value (plans refer to each other, recursively). */
function memo<T>(get: () => T): () => T {
  let v: T | undefined;
  return () => (v ??= get());
}

/** The plan of a fully qualified message (`k8s.io.api.core.v1.Pod`); undefined when proto/k8s lacks it. */
export function k8sMessage(fullName: string): MessagePlan | undefined {
  const cached = plans.get(fullName);
  if (cached) return cached;
  let type: protobuf.Type;
  try {
    type = root.lookupType(fullName);
  } catch {
    return undefined;
  }
  const fields: FieldPlan[] = type.fieldsArray
    .map((f): FieldPlan => {
      const mapKey = f instanceof protobuf.MapField ? f.keyType : undefined;
      const rt = f.resolvedType;
      const msgName = rt instanceof protobuf.Type ? rt.fullName.replace(/^\./, "") : undefined;
      return {
        name: f.name,
        inline: INLINE.has(`${fullName}.${f.name}`),
        id: f.id,
        repeated: f.repeated,
        ...(mapKey ? { mapKey } : {}),
        ...(msgName ? { message: memo(() => k8sMessage(msgName)!) } : { scalar: f.type }),
      };
    })
    .sort((a, b) => a.id - b.id);
  const special = SPECIALS[fullName];
  let names: Set<string> | undefined;
  const plan: MessagePlan = {
    fullName,
    fields,
    byId: new Map(fields.map((f) => [f.id, f])),
    byName: new Map(fields.map((f) => [f.name, f])),
    inlineFields: fields.filter((f) => f.inline),
    byNumber: fields.reduce<(FieldPlan | undefined)[]>((a, f) => ((a[f.id] = f), a), []),
    jsonNames: () => (names ??= new Set(fields.flatMap((f) => (f.inline ? [...f.message!().jsonNames()] : [f.name])))),
    ...(special ? { special } : {}),
  };
  plans.set(fullName, plan);
  return plan;
}

function malformed(what: string): Error {
  return badRequest(`the protobuf body is malformed: ${what}`);
}

// ---- decode: bytes → Kubernetes JSON ---------------------------------------

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LEN = 2;
const WIRE_FIXED32 = 5;

function utf8(buf: Uint8Array, start: number, end: number): string {
  return Buffer.from(buf.buffer, buf.byteOffset + start, end - start).toString("utf8");
}

/** A bounds-checked protobuf reader; truncation and bad varints are 400s. */
export class Reader {
  pos: number;
  private lo = 0;
  private hi = 0;
  constructor(
    readonly buf: Uint8Array,
    start = 0,
    readonly end = buf.length,
  ) {
    this.pos = start;
  }

  private varint(): void {
    let lo = 0;
    let hi = 0;
    for (let shift = 0; shift < 70; shift += 7) {
      if (this.pos >= this.end) throw malformed("truncated varint");
      const b = this.buf[this.pos++]!;
      if (shift < 28) lo |= (b & 0x7f) << shift;
      else if (shift === 28) {
        lo |= (b & 0x0f) << 28;
        hi |= (b & 0x7f) >> 4;
      } else hi |= (b & 0x7f) << (shift - 32);
      if (b < 0x80) {
        this.lo = lo >>> 0;
        this.hi = hi >>> 0;
        return;
      }
    }
    throw malformed("varint longer than 10 bytes");
  }

  uint32(): number {
    this.varint();
    return this.lo;
  }

  /** A signed 64-bit varint as a number (exact up to 2^53). */
  int64(): number {
    this.varint();
    return (this.hi | 0) * 4294967296 + this.lo;
  }

  uint64(): number {
    this.varint();
    return this.hi * 4294967296 + this.lo;
  }

  int32(): number {
    this.varint();
    return this.lo | 0;
  }

  bool(): boolean {
    this.varint();
    return this.lo !== 0 || this.hi !== 0;
  }

  /** The end offset of a length-delimited value starting here (the position moves past the length). */
  lengthEnd(): number {
    const n = this.uint32();
    const end = this.pos + n;
    if (end > this.end) throw malformed(`a length of ${n} runs past the end of its message`);
    return end;
  }

  bytes(): Uint8Array {
    const end = this.lengthEnd();
    const b = this.buf.subarray(this.pos, end);
    this.pos = end;
    return b;
  }

  string(): string {
    const end = this.lengthEnd();
    const start = this.pos;
    this.pos = end;
    // Short ASCII strings (names, labels, enums) are faster in JS than through Buffer.
    if (end - start <= 24) {
      let out = "";
      for (let i = start; i < end; i++) {
        const c = this.buf[i]!;
        if (c >= 0x80) return utf8(this.buf, start, end);
        out += String.fromCharCode(c);
      }
      return out;
    }
    return utf8(this.buf, start, end);
  }

  fixed(n: 4 | 8): DataView {
    if (this.pos + n > this.end) throw malformed("truncated fixed-size value");
    const v = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, n);
    this.pos += n;
    return v;
  }
}

function wireOf(scalar: string | undefined): number {
  if (scalar === undefined || scalar === "string" || scalar === "bytes") return WIRE_LEN;
  if (scalar === "double" || scalar === "fixed64" || scalar === "sfixed64") return WIRE_FIXED64;
  if (scalar === "float" || scalar === "fixed32" || scalar === "sfixed32") return WIRE_FIXED32;
  return WIRE_VARINT;
}

function readScalar(r: Reader, scalar: string): unknown {
  switch (scalar) {
    case "string":
      return r.string();
    case "bytes": {
      const b = r.bytes();
      return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64");
    }
    case "bool":
      return r.bool();
    case "int32":
      return r.int32();
    case "uint32":
      return r.uint32();
    case "int64":
      return r.int64();
    case "uint64":
      return r.uint64();
    case "double":
      return r.fixed(8).getFloat64(0, true);
    case "float":
      return r.fixed(4).getFloat32(0, true);
    default:
      throw malformed(`unsupported scalar type ${scalar}`);
  }
}

function readField(r: Reader, f: FieldPlan, wire: number, m: MessagePlan): unknown {
  const want = wireOf(f.scalar);
  if (wire !== want) throw malformed(`field ${f.id} (${f.name}) of ${m.fullName} has wire type ${wire}, expected ${want}`);
  if (f.scalar !== undefined) return readScalar(r, f.scalar);
  const end = r.lengthEnd();
  const v = decodeAs(f.message!(), r, end);
  r.pos = end;
  return v;
}

/** Decodes the message at r.pos..end as Kubernetes JSON (undefined: a zero Time, omitted). */
function decodeAs(m: MessagePlan, r: Reader, end: number): unknown {
  if (m.special) return decodeSpecial(m, r, end);
  return decodeFields(m, r, end);
}

function decodeFields(m: MessagePlan, r: Reader, end: number): KubeJson {
  const out: KubeJson = {};
  while (r.pos < end) {
    const tag = r.uint32();
    const id = tag >>> 3;
    const wire = tag & 7;
    const f = m.byNumber[id];
    if (!f) throw badRequest(`the protobuf body has field number ${id} (wire type ${wire}), unknown in ${m.fullName}`);
    if (f.mapKey !== undefined) {
      if (wire !== WIRE_LEN) throw malformed(`map field ${f.id} (${f.name}) of ${m.fullName} has wire type ${wire}`);
      const entryEnd = r.lengthEnd();
      let key: unknown = f.mapKey === "string" ? "" : 0;
      let value: unknown = f.scalar === "string" ? "" : f.scalar === "bytes" ? "" : f.scalar === undefined ? {} : 0;
      while (r.pos < entryEnd) {
        const t = r.uint32();
        if (t >>> 3 === 1 && (t & 7) === wireOf(f.mapKey)) key = readScalar(r, f.mapKey);
        else if (t >>> 3 === 2) value = readField(r, f, t & 7, m);
        else throw malformed(`map entry of ${f.name} in ${m.fullName} has field ${t >>> 3}`);
      }
      if (r.pos !== entryEnd) throw malformed(`map entry of ${f.name} in ${m.fullName} overruns its length`);
      const map = (out[f.name] ??= {}) as KubeJson;
      map[String(key)] = value;
      continue;
    }
    if (f.repeated) {
      const list = (out[f.name] ??= []) as unknown[];
      // Packed scalars (proto2 writes them unpacked; both are legal input).
      if (wire === WIRE_LEN && f.scalar !== undefined && wireOf(f.scalar) !== WIRE_LEN) {
        const packedEnd = r.lengthEnd();
        const sub = new Reader(r.buf, r.pos, packedEnd);
        while (sub.pos < packedEnd) list.push(readScalar(sub, f.scalar));
        r.pos = packedEnd;
        continue;
      }
      const v = readField(r, f, wire, m);
      list.push(v === undefined ? null : v);
      continue;
    }
    const v = readField(r, f, wire, m);
    if (f.inline) Object.assign(out, v);
    // Go writes every non-pointer string, "" included; its JSON omits them (omitempty).
    else if (v === undefined || v === "") delete out[f.name];
    else out[f.name] = v;
  }
  if (r.pos !== end) throw malformed(`a field of ${m.fullName} overruns its message`);
  return out;
}

// Go's zero time.Time as Unix seconds (what old clients write for an unset Time).
const GO_ZERO_TIME = -62135596800;

function decodeSpecial(m: MessagePlan, r: Reader, end: number): unknown {
  const v = decodeFields(m, r, end);
  switch (m.special) {
    case "time":
    case "microTime": {
      const seconds = Number(v["seconds"] ?? 0);
      const nanos = Number(v["nanos"] ?? 0);
      // An empty Time is Go's zero time: JSON null, omitted here.
      if (!("seconds" in v) && !("nanos" in v)) return undefined;
      if (seconds === GO_ZERO_TIME && nanos === 0) return undefined;
      return m.special === "time" ? formatTime(seconds) : formatMicroTime(seconds, nanos);
    }
    case "duration":
      return formatDuration(Number(v["duration"] ?? 0));
    case "quantity":
      return String(v["string"] ?? "0");
    case "intOrString":
      return Number(v["type"] ?? 0) === 1 ? String(v["strVal"] ?? "") : Number(v["intVal"] ?? 0);
    case "fieldsV1":
      return parseRawJson(v["Raw"], m);
    case "rawExtension":
      return parseRawJson(v["raw"], m);
    case "stringList":
      return v["items"] ?? [];
    default:
      return v;
  }
}

function parseRawJson(b64: unknown, m: MessagePlan): unknown {
  if (b64 === undefined) return {};
  const raw = Buffer.from(String(b64), "base64");
  if (raw.length === 0) return {};
  try {
    return JSON.parse(raw.toString("utf8")) as unknown;
  } catch {
    throw malformed(`the raw bytes of a ${m.fullName} are not JSON`);
  }
}

/** Decodes Kubernetes protobuf message bytes (no envelope) as Kubernetes JSON. */
export function decodeMessage(fullName: string, bytes: Uint8Array): KubeJson {
  const m = k8sMessage(fullName);
  if (!m) throw badRequest(`no protobuf message ${fullName}`);
  const r = new Reader(bytes);
  return decodeFields(m, r, bytes.length);
}

// ---- encode: Kubernetes JSON → bytes ---------------------------------------

function isObject(v: unknown): v is KubeJson {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function at(path: string, name: string): string {
  return path ? `${path}.${name}` : name;
}

function writeScalar(w: protobuf.Writer, scalar: string, v: unknown, path: string): void {
  switch (scalar) {
    case "string":
      if (typeof v !== "string") throw badRequest(`${path}: expected a string, got ${typeof v}`);
      w.string(v);
      return;
    case "bytes":
      if (typeof v !== "string") throw badRequest(`${path}: expected base64 bytes, got ${typeof v}`);
      w.bytes(Buffer.from(v, "base64"));
      return;
    case "bool":
      if (typeof v !== "boolean") throw badRequest(`${path}: expected a boolean, got ${typeof v}`);
      w.bool(v);
      return;
    case "double":
    case "float":
      if (typeof v !== "number") throw badRequest(`${path}: expected a number, got ${typeof v}`);
      if (scalar === "double") w.double(v);
      else w.float(v);
      return;
  }
  if (typeof v !== "number" || !Number.isInteger(v)) throw badRequest(`${path}: expected an integer, got ${JSON.stringify(v)}`);
  switch (scalar) {
    case "int32":
      w.int32(v);
      return;
    case "uint32":
      w.uint32(v);
      return;
    case "int64":
      w.int64(v);
      return;
    case "uint64":
      w.uint64(v);
      return;
    default:
      throw badRequest(`${path}: unsupported scalar type ${scalar}`);
  }
}

function writeValue(w: protobuf.Writer, f: FieldPlan, id: number, v: unknown, path: string): void {
  if (f.scalar !== undefined) {
    w.uint32((id << 3) | wireOf(f.scalar));
    writeScalar(w, f.scalar, v, path);
    return;
  }
  w.uint32((id << 3) | WIRE_LEN).fork();
  encodeAs(f.message!(), v, w, path);
  w.ldelim();
}

/** Kinds' own apiVersion/kind: in protobuf they live in the envelope, not in the message. */
const TYPE_META = new Set(["apiVersion", "kind"]);

function encodeAs(m: MessagePlan, v: unknown, w: protobuf.Writer, path: string): void {
  if (m.special) {
    encodeSpecial(m, v, w, path);
    return;
  }
  if (!isObject(v)) throw badRequest(`${path || m.fullName}: expected an object, got ${Array.isArray(v) ? "an array" : typeof v}`);
  // The fields present, in field-number order; keys of inline structs grouped under their field.
  const present: FieldPlan[] = [];
  let inlined: Map<FieldPlan, KubeJson> | undefined;
  for (const k in v) {
    const f = m.byName.get(k);
    if (f && !f.inline) {
      present.push(f);
      continue;
    }
    if (TYPE_META.has(k)) continue;
    const host = m.inlineFields.find((i) => i.message!().jsonNames().has(k));
    if (!host) throw badRequest(`strict decoding error: unknown field "${at(path, k)}"`);
    inlined ??= new Map();
    if (!inlined.has(host)) {
      inlined.set(host, {});
      present.push(host);
    }
    inlined.get(host)![k] = v[k];
  }
  if (present.length > 1) present.sort((a, b) => a.id - b.id);
  for (const f of present) {
    if (f.inline) {
      writeValue(w, f, f.id, inlined!.get(f), path);
      continue;
    }
    const value = v[f.name];
    if (value === undefined || value === null) continue;
    const p = at(path, f.name);
    if (f.mapKey !== undefined) {
      if (!isObject(value)) throw badRequest(`${p}: expected an object`);
      for (const key of Object.keys(value).sort()) {
        const item = value[key];
        if (item === undefined || item === null) continue;
        w.uint32((f.id << 3) | WIRE_LEN).fork();
        w.uint32((1 << 3) | wireOf(f.mapKey));
        writeScalar(w, f.mapKey, f.mapKey === "string" ? key : Number(key), `${p}[${key}]`);
        writeValue(w, f, 2, item, `${p}[${key}]`);
        w.ldelim();
      }
    } else if (f.repeated) {
      if (!Array.isArray(value)) throw badRequest(`${p}: expected an array`);
      value.forEach((item, i) => writeValue(w, f, f.id, item ?? (f.scalar ? item : {}), `${p}[${i}]`));
    } else writeValue(w, f, f.id, value, p);
  }
}

function encodeSpecial(m: MessagePlan, v: unknown, w: protobuf.Writer, path: string): void {
  switch (m.special) {
    case "time":
    case "microTime": {
      if (typeof v !== "string") throw badRequest(`${path}: expected an RFC 3339 time string`);
      const { seconds, nanos } = parseTime(v, path);
      // Go's Timestamp writes non-zero fields only; Time drops the nanoseconds.
      if (seconds !== 0) w.uint32((1 << 3) | WIRE_VARINT).int64(seconds);
      if (m.special === "microTime" && nanos !== 0) w.uint32((2 << 3) | WIRE_VARINT).int32(nanos);
      return;
    }
    case "duration":
      if (typeof v !== "string") throw badRequest(`${path}: expected a duration string`);
      w.uint32((1 << 3) | WIRE_VARINT).int64(parseDuration(v, path));
      return;
    case "quantity":
      if (typeof v !== "string" && typeof v !== "number") throw badRequest(`${path}: expected a quantity string`);
      w.uint32((1 << 3) | WIRE_LEN).string(String(v));
      return;
    case "intOrString":
      // Go writes all three fields.
      if (typeof v === "number" && Number.isInteger(v)) {
        w.uint32((1 << 3) | WIRE_VARINT).int64(0);
        w.uint32((2 << 3) | WIRE_VARINT).int32(v);
        w.uint32((3 << 3) | WIRE_LEN).string("");
      } else if (typeof v === "string") {
        w.uint32((1 << 3) | WIRE_VARINT).int64(1);
        w.uint32((2 << 3) | WIRE_VARINT).int32(0);
        w.uint32((3 << 3) | WIRE_LEN).string(v);
      } else throw badRequest(`${path}: expected an integer or a string`);
      return;
    case "fieldsV1":
    case "rawExtension":
      w.uint32((1 << 3) | WIRE_LEN).bytes(Buffer.from(JSON.stringify(v), "utf8"));
      return;
    case "stringList":
      if (!Array.isArray(v)) throw badRequest(`${path}: expected an array of strings`);
      v.forEach((item, i) => {
        w.uint32((1 << 3) | WIRE_LEN);
        writeScalar(w, "string", item, `${path}[${i}]`);
      });
      return;
  }
}

/** Encodes Kubernetes JSON as the bytes of `fullName` (no envelope). */
export function encodeMessage(fullName: string, json: KubeJson): Uint8Array {
  const m = k8sMessage(fullName);
  if (!m) throw badRequest(`no protobuf message ${fullName}`);
  const w = protobuf.Writer.create();
  encodeAs(m, json, w, "");
  return w.finish();
}

// ---- Go's time and duration formats ----------------------------------------

function pad(n: number, width = 2): string {
  return String(n).padStart(width, "0");
}

function isoSeconds(seconds: number): string {
  const d = new Date(seconds * 1000);
  if (Number.isNaN(d.getTime())) throw malformed(`time ${seconds} is out of range`);
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}

/** metav1.Time's JSON: RFC 3339, seconds, UTC. */
export function formatTime(seconds: number): string {
  return `${isoSeconds(seconds)}Z`;
}

/** metav1.MicroTime's JSON: RFC 3339 with 6 fraction digits, UTC. */
export function formatMicroTime(seconds: number, nanos: number): string {
  return `${isoSeconds(seconds)}.${pad(Math.floor(nanos / 1000), 6)}Z`;
}

const TIME_RE = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/i;

/** An RFC 3339 time as Unix seconds and nanoseconds (truncated to microseconds, as MicroTime does). */
export function parseTime(s: string, path = "time"): { seconds: number; nanos: number } {
  const m = TIME_RE.exec(s);
  const ms = m ? Date.parse(`${m[1]}${m[3]!.toUpperCase()}`) : NaN;
  if (!m || Number.isNaN(ms)) throw badRequest(`${path}: "${s}" is not an RFC 3339 time`);
  const nanos = Math.floor(Number((m[2] ?? "").padEnd(9, "0")) / 1000) * 1000;
  return { seconds: Math.floor(ms / 1000), nanos };
}

const UNITS: [string, number][] = [
  ["h", 3600e9],
  ["m", 60e9],
  ["s", 1e9],
  ["ms", 1e6],
  ["us", 1e3],
  ["µs", 1e3],
  ["ns", 1],
];

/** Go's time.Duration.String (e.g. "1h0m0s", "1.5s", "300ms"). */
export function formatDuration(ns: number): string {
  if (ns === 0) return "0s";
  const sign = ns < 0 ? "-" : "";
  const a = Math.abs(ns);
  if (a < 1e9) {
    const [unit, scale] = a < 1e3 ? ["ns", 1] : a < 1e6 ? ["µs", 1e3] : ["ms", 1e6];
    return `${sign}${fraction(a, scale)}${unit}`;
  }
  const h = Math.floor(a / 3600e9);
  const m = Math.floor((a % 3600e9) / 60e9);
  const s = fraction(a % 60e9, 1e9);
  return `${sign}${h ? `${h}h${m}m` : m ? `${m}m` : ""}${s}s`;
}

function fraction(v: number, scale: number): string {
  const whole = Math.floor(v / scale);
  const rest = v % scale;
  if (rest === 0) return String(whole);
  const digits = String(scale).length - 1;
  return `${whole}.${String(rest).padStart(digits, "0").replace(/0+$/, "")}`;
}

/** Go's time.ParseDuration, in nanoseconds. */
export function parseDuration(s: string, path = "duration"): number {
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let rest = s;
  let sign = 1;
  if (rest.startsWith("-") || rest.startsWith("+")) {
    sign = rest.startsWith("-") ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === "0") return 0;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(rest); m; m = re.exec(rest)) {
    total += Number(m[1]) * UNITS.find(([u]) => u === m![2])![1];
    matched = re.lastIndex;
  }
  if (rest === "" || matched !== rest.length) throw badRequest(`${path}: "${s}" is not a duration`);
  return sign * Math.round(total);
}
