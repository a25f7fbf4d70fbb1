/**
 * A change record's event with its revision written in, without decoding it.
 *
 * The store writes each change record before Redis assigns its revision: an
 * encoded WatchEvent whose `revision` (field 4) is 0 and whose object's
 * `metadata.resourceVersion` is "" (the object's bytes appended as field 2
 * after the other fields, store.ts). The relay publishes the event with both
 * set. `withRevision` does that on the wire: it walks the event → Object (one
 * oneof field: the kind) → the kind (`metadata`, field 3 of every kind) →
 * ObjectMeta, inserts `resource_version` (field 5) and the event's
 * `revision`, fixes the three enclosing lengths and puts the event's fields
 * in field-number order — the bytes ts-proto's encoder gives for the decoded
 * event with both set (event-revision.test.ts checks it for every kind),
 * without building the object.
 */

/** The wire type of length-delimited fields. */
const LEN = 2;
/** WatchEvent: type = 1, object = 2, status = 3, revision = 4 (varint). */
const EVENT_TYPE = 1;
const EVENT_OBJECT = 2;
const EVENT_REVISION = 4;
/** Every kind's message: metadata = 3. */
const KIND_METADATA = 3;
/** ObjectMeta: resource_version = 5. */
const META_RESOURCE_VERSION = 5;

/** A field's extent: where its tag starts and ends, where its value's bytes start (after a length, if any), where it ends. */
interface Span {
  num: number;
  wire: number;
  start: number;
  tagEnd: number;
  data: number;
  end: number;
}

/** Thrown inside the walk when the bytes are not as expected; withRevision answers undefined. */
const MALFORMED = new Error("malformed");

/** Where the last readVarint's varint ended: a module variable, not a [value, next] pair allocated per varint. */
let varintEnd = 0;

/** The varint at `pos` (its end in `varintEnd`). */
function readVarint(b: Uint8Array, pos: number, end: number): number {
  let value = 0;
  let mul = 1;
  for (let i = pos; i < end && i < pos + 10; i++) {
    const byte = b[i] as number;
    value += (byte & 0x7f) * mul;
    if (byte < 0x80) {
      varintEnd = i + 1;
      return value;
    }
    mul *= 128;
  }
  throw MALFORMED;
}

/** The fields of a message between `pos` and `end`, in the order they appear. */
function fields(b: Uint8Array, pos: number, end: number): Span[] {
  const out: Span[] = [];
  while (pos < end) {
    const start = pos;
    const tag = readVarint(b, pos, end);
    const afterTag = varintEnd;
    const num = Math.floor(tag / 8);
    const wire = tag & 7;
    let data = afterTag;
    switch (wire) {
      case 0:
        readVarint(b, afterTag, end);
        pos = varintEnd;
        break;
      case 1:
        pos = afterTag + 8;
        break;
      case LEN: {
        const len = readVarint(b, afterTag, end);
        data = varintEnd;
        pos = data + len;
        break;
      }
      case 5:
        pos = afterTag + 4;
        break;
      default:
        throw MALFORMED; // groups: none of our messages has them
    }
    if (num === 0 || pos > end) throw MALFORMED;
    out.push({ num, wire, start, tagEnd: afterTag, data, end: pos });
  }
  return out;
}

function varintSize(v: number): number {
  let n = 1;
  while (v >= 128) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/** Writes `v` as a varint at `pos`; returns the position after it. */
function writeVarint(out: Uint8Array, pos: number, v: number): number {
  while (v >= 128) {
    out[pos++] = (v % 128) | 0x80;
    v = Math.floor(v / 128);
  }
  out[pos++] = v;
  return pos;
}

/**
 * Copies `event[from, to)` into `out` at `p`; returns the position after it. A module function, not a closure made
 * per call: tsx's keepNames wraps a named closure in __name (a defineProperty) each time it is made.
 */
function copyInto(out: Uint8Array, p: number, event: Uint8Array, from: number, to: number): number {
  out.set(event.subarray(from, to), p);
  return p + to - from;
}

/** The one length-delimited field numbered `num` among `fs`, or a MALFORMED throw. */
function only(fs: Span[], num: number): Span {
  const found = fs.filter((f) => f.num === num);
  if (found.length !== 1 || found[0]!.wire !== LEN) throw MALFORMED;
  return found[0]!;
}

/** Where an encoded Object (its kind's span) gets its resourceVersion, and the lengths once it has it. */
interface RvLayout {
  kind: Span;
  meta: Span;
  /** Where in ObjectMeta the resource_version field goes (before the first field numbered above it). */
  at: number;
  rv: string;
  metaLen: number;
  kindLen: number;
  /** The Object's new length (its one field, the kind, with its tag). */
  objLen: number;
}

/**
 * The layout of the Object spanning `buf[from, to)` once `String(revision)`
 * is written into its metadata; undefined when it is not an Object as the
 * store writes it (not exactly one field, the kind, spanning it; a
 * resourceVersion already set). Throws MALFORMED on unreadable bytes.
 */
function rvLayout(buf: Uint8Array, from: number, to: number, revision: number): RvLayout | undefined {
  const objFields = fields(buf, from, to);
  if (objFields.length !== 1 || objFields[0]!.wire !== LEN) return undefined;
  const kind = objFields[0]!;
  if (kind.start !== from || kind.end !== to) return undefined;
  const meta = only(fields(buf, kind.data, kind.end), KIND_METADATA);
  const metaFields = fields(buf, meta.data, meta.end);
  if (metaFields.some((f) => f.num === META_RESOURCE_VERSION)) return undefined;
  const at = metaFields.find((f) => f.num > META_RESOURCE_VERSION)?.start ?? meta.end;
  const rv = String(revision);
  const rvField = 1 + varintSize(rv.length) + rv.length;
  // The new lengths of ObjectMeta, the kind and the Object (each grows by the field and by its child's longer length).
  const metaLen = meta.end - meta.data + rvField;
  const kindLen = kind.end - kind.data + (meta.tagEnd - meta.start) + varintSize(metaLen) + metaLen - (meta.end - meta.start);
  const objLen = kind.tagEnd - kind.start + varintSize(kindLen) + kindLen;
  return { kind, meta, at, rv, metaLen, kindLen, objLen };
}

/**
 * Writes the Object's kind laid out by {@link rvLayout} into `out` at `p`,
 * with the resourceVersion: the kind's tag and new length, its fields before
 * the metadata, the metadata's tag and new length, ObjectMeta up to field 5,
 * resource_version, the rest of ObjectMeta and of the kind. Returns the
 * position after it.
 */
function writeWithRv(out: Uint8Array, p: number, buf: Uint8Array, l: RvLayout): number {
  p = copyInto(out, p, buf, l.kind.start, l.kind.tagEnd);
  p = writeVarint(out, p, l.kindLen);
  p = copyInto(out, p, buf, l.kind.data, l.meta.tagEnd);
  p = writeVarint(out, p, l.metaLen);
  p = copyInto(out, p, buf, l.meta.data, l.at);
  out[p++] = (META_RESOURCE_VERSION << 3) | LEN;
  p = writeVarint(out, p, l.rv.length);
  for (let i = 0; i < l.rv.length; i++) out[p++] = l.rv.charCodeAt(i);
  return copyInto(out, p, buf, l.at, l.kind.end);
}

/**
 * The event's bytes with `revision` set and its object's
 * `metadata.resourceVersion` = String(revision), in the encoder's field
 * order; undefined when the bytes are not a change record as the store
 * writes it (no object or metadata, a revision or resourceVersion already
 * set, unreadable): the caller then decodes and encodes.
 */
export function withRevision(event: Uint8Array, revision: number): Uint8Array | undefined {
  if (!Number.isSafeInteger(revision) || revision <= 0) return undefined;
  try {
    const top = fields(event, 0, event.length);
    if (top.some((f) => f.num === EVENT_REVISION)) return undefined;
    const obj = only(top, EVENT_OBJECT);
    const l = rvLayout(event, obj.data, obj.end, revision);
    if (!l) return undefined;
    const total = event.length - (obj.end - obj.start) + (obj.tagEnd - obj.start) + varintSize(l.objLen) + l.objLen + 1 + varintSize(revision);

    const out = new Uint8Array(total);
    let p = 0;
    for (const f of top) if (f.num < EVENT_OBJECT) p = copyInto(out, p, event, f.start, f.end);
    // The object's tag and new length, then its kind with the resourceVersion …
    p = copyInto(out, p, event, obj.start, obj.tagEnd);
    p = writeVarint(out, p, l.objLen);
    p = writeWithRv(out, p, event, l);
    // … then the event's status (none in a change record), revision, and the rest in field order.
    for (const f of top) if (f.num > EVENT_OBJECT && f.num < EVENT_REVISION) p = copyInto(out, p, event, f.start, f.end);
    out[p++] = EVENT_REVISION << 3;
    p = writeVarint(out, p, revision);
    for (const f of top) if (f.num > EVENT_REVISION) p = copyInto(out, p, event, f.start, f.end);
    if (p !== total) return undefined;
    return out;
  } catch (err) {
    if (err === MALFORMED) return undefined;
    throw err;
  }
}

/** An encoded event's type and its object's bytes (views of the event's bytes), read without decoding. */
export interface EventParts {
  /** The `type` field's UTF-8 bytes (empty when unset). */
  type: Uint8Array;
  /** The encoded Object (field 2). */
  object: Uint8Array;
}

/**
 * The type and the encoded object of an encoded WatchEvent, as views of
 * `event` (no copy); undefined when it has no object, more than one, or is
 * unreadable. The object's bytes are what ObjectMsg.encode gave the writer
 * (the store's, or withRevision's for the relay's publish).
 */
export function eventParts(event: Uint8Array): EventParts | undefined {
  try {
    let type: Uint8Array = event.subarray(0, 0);
    let object: Uint8Array | undefined;
    for (const f of fields(event, 0, event.length)) {
      if (f.num === EVENT_TYPE && f.wire === LEN) type = event.subarray(f.data, f.end);
      else if (f.num === EVENT_OBJECT) {
        if (object || f.wire !== LEN) return undefined;
        object = event.subarray(f.data, f.end);
      }
    }
    return object && { type, object };
  } catch (err) {
    if (err === MALFORMED) return undefined;
    throw err;
  }
}

/** Reply (the NATS door's answer): object = 1. */
const REPLY_OBJECT = 1;

/**
 * The NATS door's Reply carrying an object the store just wrote: `object` is
 * the Object as the store encoded it (its `metadata.resourceVersion` ""), and
 * the answer has `String(revision)` written in — the bytes ts-proto's encoder
 * gives for Reply { object } with the decoded object and that
 * resourceVersion, without encoding the object again. Undefined when the
 * bytes are not an object as the store writes it (no metadata, a
 * resourceVersion already set, unreadable): the caller then encodes.
 */
export function replyWithWrittenObject(object: Uint8Array, revision: number): Uint8Array | undefined {
  if (!Number.isSafeInteger(revision) || revision <= 0) return undefined;
  try {
    const l = rvLayout(object, 0, object.length, revision);
    if (!l) return undefined;
    const total = 1 + varintSize(l.objLen) + l.objLen;
    const out = new Uint8Array(total);
    out[0] = (REPLY_OBJECT << 3) | LEN;
    const p = writeWithRv(out, writeVarint(out, 1, l.objLen), object, l);
    return p === total ? out : undefined;
  } catch (err) {
    if (err === MALFORMED) return undefined;
    throw err;
  }
}
