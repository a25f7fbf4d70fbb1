// The audit.k8s.io/v1 Event written for one request, and the rule that keeps
// credentials out of it: a Secret's, a TokenRequest's or a TokenReview's body
// is never written, whatever the policy's level.
import type { Attributes, UserInfo } from "../auth/types.js";
import type { Level } from "./policy.js";

export interface AuditUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface ObjectReference {
  resource?: string;
  namespace?: string;
  name?: string;
  apiGroup?: string;
  apiVersion?: string;
  subresource?: string;
}

export interface ResponseStatus {
  metadata: Record<string, never>;
  code: number;
  status?: string;
  reason?: string;
  message?: string;
}

/** audit.k8s.io/v1 Event, as the kube-apiserver's log backend writes it (one JSON line). */
export interface AuditEvent {
  kind: "Event";
  apiVersion: "audit.k8s.io/v1";
  level: Level;
  auditID: string;
  stage: "ResponseComplete";
  requestURI: string;
  verb: string;
  user: AuditUser;
  impersonatedUser?: AuditUser;
  sourceIPs: string[];
  userAgent?: string;
  objectRef?: ObjectReference;
  responseStatus: ResponseStatus;
  requestObject?: unknown;
  responseObject?: unknown;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  annotations?: Record<string, string>;
}

export function auditUser(u: UserInfo): AuditUser {
  const out: AuditUser = { username: u.name };
  if (u.uid) out.uid = u.uid;
  if (u.groups.length) out.groups = [...u.groups];
  if (Object.keys(u.extra).length) out.extra = u.extra;
  return out;
}

/** The object a resource request names; undefined for non-resource requests. Empty fields left out, as Kubernetes' omitempty. */
export function objectRef(a: Attributes): ObjectReference | undefined {
  if (!a.resourceRequest) return undefined;
  const ref: ObjectReference = {};
  if (a.resource) ref.resource = a.resource;
  if (a.namespace) ref.namespace = a.namespace;
  if (a.name) ref.name = a.name;
  if (a.apiGroup) ref.apiGroup = a.apiGroup;
  if (a.apiVersion) ref.apiVersion = a.apiVersion;
  if (a.subresource) ref.subresource = a.subresource;
  return ref;
}

const SENSITIVE_KINDS = new Set(["Secret", "SecretList", "TokenRequest", "TokenReview"]);

/**
 * True when the request's bodies carry credentials: Secrets (any verb and
 * subresource), serviceaccounts/token (TokenRequest) and TokenReviews —
 * Kubernetes' recommended policies log these at Metadata; choreo enforces it.
 */
export function sensitiveRequest(a: Attributes): boolean {
  if (!a.resourceRequest) return false;
  if (a.apiGroup === "" && a.resource === "secrets") return true;
  if (a.apiGroup === "" && a.resource === "serviceaccounts" && a.subresource === "token") return true;
  return a.apiGroup === "authentication.k8s.io" && a.resource === "tokenreviews";
}

/** True when a body is itself a credential-bearing kind, or a list holding one (a body sent to the wrong path, a Table). */
export function sensitiveBody(o: unknown): boolean {
  if (typeof o !== "object" || o === null) return false;
  const kind = (o as { kind?: unknown }).kind;
  if (typeof kind === "string" && SENSITIVE_KINDS.has(kind)) return true;
  const items = (o as { items?: unknown }).items;
  if (Array.isArray(items)) return items.some(sensitiveBody);
  const rows = (o as { rows?: unknown }).rows;
  if (Array.isArray(rows)) return rows.some((r) => sensitiveBody((r as { object?: unknown } | null)?.object));
  return false;
}

/**
 * A body as the event carries it: objects as they are, JSON text or bytes
 * parsed; anything else (YAML, protobuf) left out, since a line must stay JSON.
 */
export function bodyForEvent(body: unknown, omitManagedFields: boolean): unknown {
  let o = body;
  if (o instanceof Uint8Array) o = Buffer.from(o.buffer, o.byteOffset, o.byteLength).toString("utf8");
  if (typeof o === "string") {
    try {
      o = JSON.parse(o) as unknown;
    } catch {
      return undefined;
    }
  }
  if (o === undefined || o === null) return undefined;
  return omitManagedFields ? withoutManagedFields(o) : o;
}

function withoutManagedFields(o: unknown): unknown {
  if (typeof o !== "object" || o === null || Array.isArray(o)) return o;
  const rec = o as Record<string, unknown>;
  const out: Record<string, unknown> = { ...rec };
  const meta = rec["metadata"];
  if (typeof meta === "object" && meta !== null && "managedFields" in meta) {
    const { managedFields: _dropped, ...rest } = meta as Record<string, unknown>;
    out["metadata"] = rest;
  }
  if (Array.isArray(rec["items"])) out["items"] = rec["items"].map(withoutManagedFields);
  return out;
}

/** The second microTime last formatted, and its text up to the seconds (2026-11-26T06:44:23): two stamps per request, most in the same second. */
let cachedSecond = Number.NaN;
let cachedPrefix = "";

/** RFC 3339 with microseconds, as Kubernetes' MicroTime: 2026-11-26T06:44:23.123456Z. */
export function microTime(epochMicros: number): string {
  const second = Math.floor(epochMicros / 1_000_000);
  if (second !== cachedSecond) {
    cachedPrefix = new Date(second * 1000).toISOString().slice(0, 19); // …T06:44:23.000Z
    cachedSecond = second;
  }
  const micros = String(Math.floor(epochMicros - second * 1_000_000)).padStart(6, "0");
  return `${cachedPrefix}.${micros}Z`;
}

/** Microseconds since the epoch, from the monotonic high-resolution clock. */
export function nowMicros(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
}
