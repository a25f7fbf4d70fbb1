// Decoding a pod's event without its managedFields, for an informer whose
// transform drops them anyway (stripPod): each pod event carries one entry
// per writer (the creator, the binding, the node agent's status), five
// strings and a FieldsV1 each, which every actor decoded to throw away — a
// large part of the event's decode and of its garbage.
//
// The encoded ObjectMeta writes managedFields (field 17) last. When all of
// its fields from the first managedFields entry on are managedFields, the
// event is decoded by the loops below down to the pod (WatchEvent, Object,
// Pod: the generated decoders' loops, field by field) and its metadata by the
// generated ObjectMeta decoder over the bytes before those entries, the
// reader then moved past them: the event is the whole decode's with
// `metadata.managedFields` empty, nothing else changed, and no copy of the
// message made. Anything else (not a pod, no managedFields, fields in another
// order, a field twice, malformed bytes) is decoded whole.
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { WatchEvent, WatchEvent_PrevFieldsEntry, WatchEvent_PrevLabelsEntry } from "../gen/choreo/api/v1/api.js";
import { PodSpec, PodStatus, type Pod } from "../gen/choreo/core/v1/core.js";
import { ObjectMeta, Status } from "../gen/choreo/meta/v1/meta.js";

/** Tags (field number << 3 | wire type 2, length-delimited) on the path to a pod's managedFields. */
const EVENT_OBJECT = (2 << 3) | 2;
const OBJECT_POD = (3 << 3) | 2;
const POD_METADATA = (3 << 3) | 2;
const META_MANAGED_FIELDS = (17 << 3) | 2;

/** A length-delimited field: where its length prefix starts, where its content starts and ends. */
interface Span {
  prefix: number;
  start: number;
  end: number;
}

/** The one field `tag` among the fields in [r.pos, end) (r left at end), or undefined when it is absent, repeated or the bytes are malformed. */
function only(r: BinaryReader, end: number, tag: number): Span | undefined {
  let found: Span | undefined;
  while (r.pos < end) {
    const t = r.uint32();
    if (t === tag) {
      if (found) return undefined;
      const prefix = r.pos;
      const len = r.uint32();
      found = { prefix, start: r.pos, end: r.pos + len };
      if (found.end > end) return undefined;
      r.pos = found.end;
    } else {
      if ((t & 7) === 4 || t === 0) return undefined;
      r.skip(t & 7, t >>> 3);
    }
  }
  return r.pos === end ? found : undefined;
}

/** Where the managedFields of the ObjectMeta in [start, end) begin, when they are its last fields and only those; undefined otherwise. */
function managedFieldsTail(r: BinaryReader, start: number, end: number): number | undefined {
  r.pos = start;
  let first: number | undefined;
  while (r.pos < end) {
    const at = r.pos;
    const t = r.uint32();
    if (t === META_MANAGED_FIELDS) first ??= at;
    else if (first !== undefined || (t & 7) === 4 || t === 0) return undefined;
    r.skip(t & 7, t >>> 3);
  }
  return r.pos === end ? first : undefined;
}

/** The generated decoders' int64 → number (theirs is module-private). */
function longToNumber(int64: { toString(): string }): number {
  const num = Number(int64.toString());
  if (num > Number.MAX_SAFE_INTEGER) throw new Error("Value is larger than Number.MAX_SAFE_INTEGER");
  if (num < Number.MIN_SAFE_INTEGER) throw new Error("Value is smaller than Number.MIN_SAFE_INTEGER");
  return num;
}

/** Where the lean decode applies: the object's, the pod's and the metadata's spans, and where the managedFields start. */
interface Plan {
  object: Span;
  pod: Span;
  meta: Span;
  cut: number;
}

/** Whether `decodeEventWithoutManagedFields` leaves out managedFields of `data` rather than decoding it whole (tests). */
export function cutsManagedFields(data: Uint8Array): boolean {
  return planOf(data) !== undefined;
}

function planOf(data: Uint8Array): Plan | undefined {
  try {
    const r = new BinaryReader(data);
    const object = only(r, data.length, EVENT_OBJECT);
    if (!object) return undefined;
    r.pos = object.start;
    const pod = only(r, object.end, OBJECT_POD);
    // The pod the Object's only field (its tag one byte): another kind's field beside it would win or lose by its place (a oneof).
    if (!pod || pod.prefix !== object.start + 1 || pod.end !== object.end) return undefined;
    r.pos = pod.start;
    const meta = only(r, pod.end, POD_METADATA);
    if (!meta) return undefined;
    const cut = managedFieldsTail(r, meta.start, meta.end);
    return cut === undefined ? undefined : { object, pod, meta, cut };
  } catch {
    // Malformed: the whole decode reports it.
    return undefined;
  }
}

/** Sets the generated decoders' recursion depth on `r` (they count it there). */
function depth(r: BinaryReader, d: number): void {
  (r as unknown as { __tsProtoDecodeDepth?: number }).__tsProtoDecodeDepth = d;
}

/** Pod.decode over the pod's span, its metadata without managedFields. */
function leanPod(r: BinaryReader, plan: Plan): Pod {
  const pod: Pod = { apiVersion: "", kind: "", metadata: undefined, spec: undefined, status: undefined };
  r.pos = plan.pod.start;
  const end = plan.pod.end;
  depth(r, 3);
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag) {
      case 10:
        pod.apiVersion = r.string();
        continue;
      case 18:
        pod.kind = r.string();
        continue;
      case 26:
        r.uint32();
        pod.metadata = ObjectMeta.decode(r, plan.cut - plan.meta.start);
        r.pos = plan.meta.end;
        continue;
      case 34:
        pod.spec = PodSpec.decode(r, r.uint32());
        continue;
      case 42:
        pod.status = PodStatus.decode(r, r.uint32());
        continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  return pod;
}

/**
 * `decodeEvent` for a reader that never keeps managedFields (an informer
 * whose transform drops them): a pod's event decoded with
 * `metadata.managedFields` empty and those entries never decoded, every other
 * field as `decodeEvent` gives it.
 */
export function decodeEventWithoutManagedFields(data: Uint8Array): WatchEvent {
  const plan = planOf(data);
  if (!plan) return WatchEvent.decode(data);
  const r = new BinaryReader(data);
  const ev: WatchEvent = { type: "", object: undefined, status: undefined, revision: 0, prevLabels: {}, prevFields: {}, hasPrev: false };
  while (r.pos < r.len) {
    const tag = r.uint32();
    depth(r, 1);
    switch (tag) {
      case 10:
        ev.type = r.string();
        continue;
      case 18:
        // The one object field (planOf): an Object whose one field is the pod.
        ev.object = { kind: { $case: "pod", value: leanPod(r, plan) } };
        r.pos = plan.object.end;
        continue;
      case 26:
        ev.status = Status.decode(r, r.uint32());
        continue;
      case 32:
        ev.revision = longToNumber(r.int64());
        continue;
      case 42: {
        const e = WatchEvent_PrevLabelsEntry.decode(r, r.uint32());
        if (e.value !== undefined) ev.prevLabels[e.key] = e.value;
        continue;
      }
      case 50: {
        const e = WatchEvent_PrevFieldsEntry.decode(r, r.uint32());
        if (e.value !== undefined) ev.prevFields[e.key] = e.value;
        continue;
      }
      case 56:
        ev.hasPrev = r.bool();
        continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  depth(r, 0);
  return ev;
}
