// The swagger 2.0 document in gnostic's protobuf form (openapi_v2.Document,
// `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`): what
// kubectl 1.20 fetches for explain and validation, with no JSON fallback.
// Field numbers are facts from google/gnostic openapiv2/OpenAPIv2.proto;
// only the messages and fields our documents use are written. Vendor
// extensions are NamedAny values whose Any carries the value as YAML (JSON
// text, which is YAML), as gnostic does.

type Json = Record<string, unknown>;

/** A minimal protobuf writer: length-delimited fields, varints, nested messages; one allocation at the end. */
class Writer {
  // Tags and lengths as byte arrays, payloads as buffers, nested messages as writers.
  private readonly parts: (Buffer | number[] | Writer)[] = [];
  private size = 0;

  private varint(n: number): void {
    const bytes: number[] = [];
    let v = n;
    while (v > 0x7f) {
      bytes.push((v & 0x7f) | 0x80);
      v = Math.floor(v / 128);
    }
    bytes.push(v);
    this.push(bytes);
  }

  private push(p: Buffer | number[] | Writer): void {
    this.parts.push(p);
    this.size += p instanceof Writer ? p.size : p.length;
  }

  private tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  string(field: number, v: unknown): this {
    if (typeof v !== "string" || v === "") return this;
    const b = Buffer.from(v);
    this.tag(field, 2);
    this.varint(b.length);
    this.push(b);
    return this;
  }

  strings(field: number, v: unknown): this {
    if (Array.isArray(v)) for (const s of v) this.string(field, s);
    return this;
  }

  bool(field: number, v: unknown): this {
    if (v !== true) return this;
    this.tag(field, 0);
    this.varint(1);
    return this;
  }

  message(field: number, w: Writer | undefined): this {
    if (!w) return this;
    this.tag(field, 2);
    this.varint(w.size);
    this.push(w);
    return this;
  }

  finish(): Buffer {
    const out = Buffer.allocUnsafe(this.size);
    this.writeTo(out, 0);
    return out;
  }

  private writeTo(out: Buffer, at: number): number {
    let o = at;
    for (const p of this.parts) {
      if (p instanceof Writer) o = p.writeTo(out, o);
      else {
        if (Buffer.isBuffer(p)) p.copy(out, o);
        else out.set(p, o);
        o += p.length;
      }
    }
    return o;
  }
}

const obj = (v: unknown): Json | undefined => (v && typeof v === "object" && !Array.isArray(v) ? (v as Json) : undefined);

/** NamedAny{name, value: Any{yaml}} for every `x-` key of a JSON object. */
function vendorExtensions(w: Writer, field: number, o: Json): void {
  for (const [k, v] of Object.entries(o)) {
    if (!k.startsWith("x-")) continue;
    w.message(field, new Writer().string(1, k).message(2, new Writer().string(2, JSON.stringify(v))));
  }
}

function schema(s: Json): Writer {
  const w = new Writer().string(1, s["$ref"]).string(2, s["format"]).string(3, s["title"]).string(4, s["description"]);
  w.strings(19, s["required"]);
  const additional = obj(s["additionalProperties"]);
  if (additional) w.message(21, new Writer().message(1, schema(additional)));
  if (typeof s["type"] === "string") w.message(22, new Writer().string(1, s["type"]));
  const items = obj(s["items"]);
  if (items) w.message(23, new Writer().message(1, schema(items)));
  if (Array.isArray(s["allOf"])) for (const a of s["allOf"]) w.message(24, schema(a as Json));
  const props = obj(s["properties"]);
  if (props) {
    const p = new Writer();
    for (const [name, v] of Object.entries(props)) p.message(1, new Writer().string(1, name).message(2, schema(v as Json)));
    w.message(25, p);
  }
  vendorExtensions(w, 31, s);
  return w;
}

function parameter(p: Json): Writer {
  if (p["in"] === "body") {
    const body = new Writer().string(1, p["description"]).string(2, p["name"]).string(3, "body").bool(4, p["required"]);
    body.message(5, schema(obj(p["schema"]) ?? {}));
    return new Writer().message(1, new Writer().message(1, body));
  }
  const path = p["in"] === "path";
  // QueryParameterSubSchema: type 6, unique_items 20; PathParameterSubSchema: type 5, unique_items 19.
  const sub = new Writer()
    .bool(1, p["required"])
    .string(2, p["in"])
    .string(3, p["description"])
    .string(4, p["name"])
    .string(path ? 5 : 6, p["type"])
    .bool(path ? 19 : 20, p["uniqueItems"]);
  return new Writer().message(1, new Writer().message(2, new Writer().message(path ? 4 : 3, sub)));
}

function operation(o: Json): Writer {
  const w = new Writer().strings(1, o["tags"]).string(3, o["description"]).string(5, o["operationId"]).strings(6, o["produces"]).strings(7, o["consumes"]);
  if (Array.isArray(o["parameters"])) for (const p of o["parameters"]) w.message(8, parameter(p as Json));
  const responses = new Writer();
  for (const [code, r] of Object.entries(obj(o["responses"]) ?? {})) {
    const rj = obj(r) ?? {};
    const resp = new Writer().string(1, rj["description"]);
    const s = obj(rj["schema"]);
    if (s) resp.message(2, new Writer().message(1, schema(s)));
    responses.message(1, new Writer().string(1, code).message(2, new Writer().message(1, resp)));
  }
  w.message(9, responses).strings(10, o["schemes"]);
  vendorExtensions(w, 13, o);
  return w;
}

const METHODS: Record<string, number> = { get: 2, put: 3, post: 4, delete: 5, options: 6, head: 7, patch: 8 };

/** Encodes a swagger 2.0 JSON document as gnostic's openapi_v2.Document. */
export function encodeV2Document(doc: Json): Uint8Array {
  const info = obj(doc["info"]) ?? {};
  const w = new Writer().string(1, doc["swagger"]).message(2, new Writer().string(1, info["title"]).string(2, info["version"]));
  const paths = new Writer();
  for (const [p, item] of Object.entries(obj(doc["paths"]) ?? {})) {
    const ij = obj(item) ?? {};
    const pi = new Writer();
    for (const [m, n] of Object.entries(METHODS)) {
      const op = obj(ij[m]);
      if (op) pi.message(n, operation(op));
    }
    if (Array.isArray(ij["parameters"])) for (const prm of ij["parameters"]) pi.message(9, parameter(prm as Json));
    paths.message(2, new Writer().string(1, p).message(2, pi));
  }
  w.message(8, paths);
  const defs = new Writer();
  for (const [name, s] of Object.entries(obj(doc["definitions"]) ?? {})) defs.message(1, new Writer().string(1, name).message(2, schema(s as Json)));
  w.message(9, defs);
  return w.finish();
}
