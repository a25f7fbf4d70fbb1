// The Kubernetes protobuf envelope (`k8s\0` + runtime.Unknown) and the watch
// stream framing, over the message transcoder of codec.ts.
import protobuf from "protobufjs";
import { badRequest, unsupportedMediaType } from "../api/errors.js";
import { KINDS } from "../api/kinds.js";
import { decodeMessage, encodeMessage, k8sMessage, Reader, type KubeJson } from "./codec.js";

/** Kubernetes' protobuf media type. */
export const PROTOBUF = "application/vnd.kubernetes.protobuf";
/** The media type of a protobuf watch stream. */
export const PROTOBUF_WATCH = `${PROTOBUF};stream=watch`;
/** The 4 bytes every protobuf body starts with. */
export const MAGIC = Uint8Array.from([0x6b, 0x38, 0x73, 0x00]);

const META = "k8s.io.apimachinery.pkg.apis.meta.v1";
const UNKNOWN = "k8s.io.apimachinery.pkg.runtime.Unknown";
const WATCH_EVENT = `${META}.WatchEvent`;

// Kinds registered in every group version (metav1.AddToGroupVersion).
const META_KINDS: Record<string, string> = {
  Status: `${META}.Status`,
  DeleteOptions: `${META}.DeleteOptions`,
  WatchEvent: WATCH_EVENT,
};

function packageOf(group: string, version: string): string {
  return `k8s.io.api.${group === "" ? "core" : group.split(".")[0]}.${version}`;
}

// apiVersion/kind → message, for every served kind, its List, and the subresource kinds.
const byKind = new Map<string, string>();
for (const k of KINDS) {
  byKind.set(`${k.apiVersion}/${k.kind}`, `${packageOf(k.group, k.version)}.${k.kind}`);
  byKind.set(`${k.apiVersion}/${k.kind}List`, `${packageOf(k.group, k.version)}.${k.kind}List`);
}
byKind.set("v1/Binding", "k8s.io.api.core.v1.Binding");
byKind.set("autoscaling/v1/Scale", "k8s.io.api.autoscaling.v1.Scale");
// HorizontalPodAutoscaler is stored as autoscaling/v2; kubectl autoscale (1.32) writes autoscaling/v1, which the gateway converts.
byKind.set("autoscaling/v1/HorizontalPodAutoscaler", "k8s.io.api.autoscaling.v1.HorizontalPodAutoscaler");
byKind.set("policy/v1/Eviction", "k8s.io.api.policy.v1.Eviction");
// The access and identity reviews (create-only, never stored): kubectl auth can-i and whoami send them in protobuf.
for (const kind of ["SelfSubjectAccessReview", "SubjectAccessReview", "LocalSubjectAccessReview", "SelfSubjectRulesReview"])
  byKind.set(`authorization.k8s.io/v1/${kind}`, `k8s.io.api.authorization.v1.${kind}`);
// TokenRequest: POST serviceaccounts/NAME/token (kubectl create token).
for (const kind of ["SelfSubjectReview", "TokenReview", "TokenRequest"]) byKind.set(`authentication.k8s.io/v1/${kind}`, `k8s.io.api.authentication.v1.${kind}`);
for (const [key, full] of byKind) if (!k8sMessage(full)) byKind.delete(key);

/** The Kubernetes message of an apiVersion and kind; undefined when it has no protobuf form here. */
export function messageOfKind(apiVersion: string, kind: string): string | undefined {
  return byKind.get(`${apiVersion}/${kind}`) ?? META_KINDS[kind];
}

/** Whether a Kubernetes JSON object can be written as protobuf (Tables and discovery documents cannot). */
export function hasProtobuf(json: unknown): boolean {
  if (typeof json !== "object" || json === null) return false;
  const { apiVersion, kind } = json as KubeJson;
  return typeof apiVersion === "string" && typeof kind === "string" && messageOfKind(apiVersion, kind) !== undefined;
}

function unknownBytes(apiVersion: string, kind: string, raw: Uint8Array): Uint8Array {
  // As Go's runtime.Unknown: typeMeta{apiVersion, kind}, raw, and both empty content fields.
  const w = protobuf.Writer.create();
  w.uint32(0x0a).fork().uint32(0x0a).string(apiVersion).uint32(0x12).string(kind).ldelim();
  w.uint32(0x12).bytes(raw);
  w.uint32(0x1a).string("");
  w.uint32(0x22).string("");
  return w.finish();
}

/** Kubernetes JSON (with apiVersion and kind) → `k8s\0` + runtime.Unknown. */
export function encodeObject(json: KubeJson): Uint8Array {
  const apiVersion = String(json["apiVersion"] ?? "");
  const kind = String(json["kind"] ?? "");
  const full = messageOfKind(apiVersion, kind);
  if (!full) throw badRequest(`${kind} (${apiVersion}) has no protobuf form`);
  const body = unknownBytes(apiVersion, kind, encodeMessage(full, json));
  const out = new Uint8Array(MAGIC.length + body.length);
  out.set(MAGIC, 0);
  out.set(body, MAGIC.length);
  return out;
}

/** The fields of a runtime.Unknown. */
export interface Unknown {
  apiVersion: string;
  kind: string;
  raw: Uint8Array;
  contentEncoding: string;
  contentType: string;
}

/** Splits an envelope: 400 without the magic or when the Unknown is malformed. */
export function decodeUnknown(bytes: Uint8Array): Unknown {
  if (bytes.length < MAGIC.length || MAGIC.some((b, i) => bytes[i] !== b)) {
    throw badRequest("the protobuf body does not start with the Kubernetes magic number (k8s\\0)");
  }
  // Walked by hand: raw is kept as a view, not turned into base64 and back.
  const end = bytes.length;
  const r = new Reader(bytes, MAGIC.length, end);
  const u: Unknown = { apiVersion: "", kind: "", raw: new Uint8Array(0), contentEncoding: "", contentType: "" };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === 0x0a) {
      const tmEnd = r.lengthEnd();
      while (r.pos < tmEnd) {
        const t = r.uint32();
        if (t === 0x0a) u.apiVersion = r.string();
        else if (t === 0x12) u.kind = r.string();
        else throw badRequest(`the protobuf body has field number ${t >>> 3} (wire type ${t & 7}), unknown in k8s.io.apimachinery.pkg.runtime.TypeMeta`);
      }
      if (r.pos !== tmEnd) throw badRequest("the protobuf body is malformed: typeMeta overruns its length");
    } else if (tag === 0x12) u.raw = r.bytes();
    else if (tag === 0x1a) u.contentEncoding = r.string();
    else if (tag === 0x22) u.contentType = r.string();
    else throw badRequest(`the protobuf body has field number ${tag >>> 3} (wire type ${tag & 7}), unknown in ${UNKNOWN}`);
  }
  return u;
}

/**
 * An envelope → Kubernetes JSON with its apiVersion and kind first. 400 when
 * malformed or of a kind with no protobuf form; 415 for a content encoding
 * or an inner content type other than protobuf.
 */
export function decodeObject(bytes: Uint8Array): KubeJson {
  const u = decodeUnknown(bytes);
  if (u.contentEncoding !== "") throw unsupportedMediaType(`the protobuf body has content encoding "${u.contentEncoding}", which is not supported`);
  if (u.contentType !== "" && u.contentType !== PROTOBUF) throw unsupportedMediaType(`the protobuf body holds "${u.contentType}", not ${PROTOBUF}`);
  if (u.kind === "") throw badRequest("Object 'Kind' is missing in the protobuf body");
  const full = messageOfKind(u.apiVersion, u.kind);
  if (!full) throw badRequest(`no kind "${u.kind}" is registered for version "${u.apiVersion}"`);
  return { apiVersion: u.apiVersion, kind: u.kind, ...decodeMessage(full, u.raw) };
}

/**
 * One frame of a `;stream=watch` response: a 4-byte big-endian length, then
 * the raw (no envelope) meta.v1.WatchEvent whose object.raw is the object's
 * envelope — as the apiserver's protobuf stream serializer writes it.
 */
export function encodeWatchFrame(type: string, object: KubeJson): Uint8Array {
  const inner = encodeObject(object);
  const w = protobuf.Writer.create();
  w.uint32(0x0a).string(type);
  w.uint32(0x12).fork().uint32(0x0a).bytes(inner).ldelim();
  const ev = w.finish();
  const out = new Uint8Array(4 + ev.length);
  new DataView(out.buffer).setUint32(0, ev.length, false);
  out.set(ev, 4);
  return out;
}

/** Splits a protobuf watch stream into events; 400 when a frame is truncated. */
export function decodeWatchFrames(bytes: Uint8Array): { type: string; object: KubeJson }[] {
  const out: { type: string; object: KubeJson }[] = [];
  let pos = 0;
  while (pos < bytes.length) {
    if (pos + 4 > bytes.length) throw badRequest("the watch stream ends inside a frame length");
    const n = new DataView(bytes.buffer, bytes.byteOffset + pos, 4).getUint32(0, false);
    if (pos + 4 + n > bytes.length) throw badRequest("the watch stream ends inside a frame");
    out.push(decodeWatchEvent(bytes.subarray(pos + 4, pos + 4 + n)));
    pos += 4 + n;
  }
  return out;
}

/** One raw meta.v1.WatchEvent (a frame without its length). */
export function decodeWatchEvent(bytes: Uint8Array): { type: string; object: KubeJson } {
  const r = new Reader(bytes);
  let type = "";
  let raw: Uint8Array | undefined;
  while (r.pos < bytes.length) {
    const tag = r.uint32();
    if (tag === 0x0a) type = r.string();
    else if (tag === 0x12) {
      const end = r.lengthEnd();
      while (r.pos < end) {
        if (r.uint32() !== 0x0a) throw badRequest("the watch event's object has an unknown field");
        raw = r.bytes();
      }
    } else throw badRequest(`the protobuf body has field number ${tag >>> 3} (wire type ${tag & 7}), unknown in ${WATCH_EVENT}`);
  }
  if (!raw) throw badRequest("the watch event has no object");
  return { type, object: decodeObject(raw) };
}
