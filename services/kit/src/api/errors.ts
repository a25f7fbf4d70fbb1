import type { Status, StatusCause } from "../gen/choreo/meta/v1/meta.js";

/** Kubernetes' StatusReason values that choreo returns. */
export const Reason = {
  NotFound: "NotFound",
  AlreadyExists: "AlreadyExists",
  Conflict: "Conflict",
  Invalid: "Invalid",
  BadRequest: "BadRequest",
  Expired: "Expired",
  Gone: "Gone",
  Forbidden: "Forbidden",
  Unauthorized: "Unauthorized",
  RequestEntityTooLarge: "RequestEntityTooLarge",
  MethodNotAllowed: "MethodNotAllowed",
  NotAcceptable: "NotAcceptable",
  UnsupportedMediaType: "UnsupportedMediaType",
  Timeout: "Timeout",
  ServiceUnavailable: "ServiceUnavailable",
  InternalError: "InternalError",
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];

/**
 * Every failed api call, on every transport: carries a Kubernetes Status.
 * The HTTP gateway writes it as-is; NATS and gRPC carry it encoded.
 */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: Status,
    options?: { cause?: unknown },
  ) {
    super(status.message, options);
  }
  get code(): number {
    return this.status.code;
  }
  get reason(): string {
    return this.status.reason;
  }
}

/** Builds a Failure Status. */
export function failure(code: number, reason: Reason | string, message: string, details?: Partial<Status["details"]>): Status {
  return {
    apiVersion: "v1",
    kind: "Status",
    metadata: { resourceVersion: "", continue: "" },
    status: "Failure",
    message,
    reason,
    details: details ? { name: "", group: "", kind: "", uid: "", causes: [], retryAfterSeconds: 0, ...details } : undefined,
    code,
  };
}

function qualified(resource: string, group = ""): string {
  return group ? `${resource}.${group}` : resource;
}

export function notFound(resource: string, name: string, group = ""): ApiError {
  return new ApiError(failure(404, Reason.NotFound, `${qualified(resource, group)} "${name}" not found`, { name, group, kind: resource }));
}

export function alreadyExists(resource: string, name: string, group = ""): ApiError {
  return new ApiError(failure(409, Reason.AlreadyExists, `${qualified(resource, group)} "${name}" already exists`, { name, group, kind: resource }));
}

/** A stale resourceVersion or a lost compare-and-set. */
export function conflict(resource: string, name: string, why: string, group = ""): ApiError {
  return new ApiError(
    failure(409, Reason.Conflict, `Operation cannot be fulfilled on ${qualified(resource, group)} "${name}": ${why}`, { name, group, kind: resource }),
  );
}

/** 422 with field causes, worded like Kubernetes: `Pod "x" is invalid: spec.containers[0].image: Required value`. */
export function invalid(kind: string, name: string, causes: StatusCause[], group = ""): ApiError {
  const list = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
  const body = list.length === 1 ? list[0] : `[${list.join(", ")}]`;
  return new ApiError(failure(422, Reason.Invalid, `${kind} "${name}" is invalid: ${body}`, { name, group, kind, causes }));
}

/** One field error for `invalid`. */
export function fieldError(
  field: string,
  reason: "FieldValueRequired" | "FieldValueInvalid" | "FieldValueNotSupported" | "FieldValueDuplicate" | "FieldValueForbidden" | "FieldValueTooLong",
  message: string,
): StatusCause {
  return { field, reason, message };
}

export function badRequest(message: string): ApiError {
  return new ApiError(failure(400, Reason.BadRequest, message));
}

export function expired(message: string): ApiError {
  return new ApiError(failure(410, Reason.Expired, message));
}

export function unauthorized(message = "Unauthorized"): ApiError {
  return new ApiError(failure(401, Reason.Unauthorized, message));
}

export function forbidden(message: string): ApiError {
  return new ApiError(failure(403, Reason.Forbidden, message));
}

export function tooLarge(message = "Request entity too large: limit is 3145728"): ApiError {
  return new ApiError(failure(413, Reason.RequestEntityTooLarge, message));
}

export function methodNotAllowed(message: string): ApiError {
  return new ApiError(failure(405, Reason.MethodNotAllowed, message));
}

export function unsupportedMediaType(message: string): ApiError {
  return new ApiError(failure(415, Reason.UnsupportedMediaType, message));
}

export function timeout(message: string): ApiError {
  return new ApiError(failure(504, Reason.Timeout, message));
}

export function unavailable(message: string): ApiError {
  return new ApiError(failure(503, Reason.ServiceUnavailable, message));
}

export function internal(message: string, cause?: unknown): ApiError {
  return new ApiError(failure(500, Reason.InternalError, `Internal error occurred: ${message}`), { cause });
}

/** The Status of any thrown value: ApiErrors keep theirs, anything else is a 500. */
export function statusOf(err: unknown): Status {
  if (err instanceof ApiError) return err.status;
  const msg = err instanceof Error ? err.message : String(err);
  return failure(500, Reason.InternalError, `Internal error occurred: ${msg}`);
}

function hasReason(err: unknown, reason: string): boolean {
  return err instanceof ApiError && err.status.reason === reason;
}

export const isNotFound = (err: unknown): boolean => hasReason(err, Reason.NotFound);
export const isAlreadyExists = (err: unknown): boolean => hasReason(err, Reason.AlreadyExists);
export const isConflict = (err: unknown): boolean => hasReason(err, Reason.Conflict);
export const isInvalid = (err: unknown): boolean => hasReason(err, Reason.Invalid);
export const isExpired = (err: unknown): boolean => hasReason(err, Reason.Expired) || hasReason(err, Reason.Gone);

/**
 * Why the api refused a binding, as a typed Status cause (`details.causes[0].reason`)
 * that schedulers read instead of the message: `NodeCannotTakePod` (the
 * node's room, checked under its lock, does not fit the pod: the scheduler's
 * cache was stale — forget the assumption and retry) and `NodeBusy` (the
 * node's lock was held: retry).
 */
export const BindingRefusal = { nodeCannotTakePod: "NodeCannotTakePod", nodeBusy: "NodeBusy" } as const;
export type BindingRefusal = (typeof BindingRefusal)[keyof typeof BindingRefusal];

/** A 409 on pods/binding with the typed cause `why`. */
export function bindingRefused(pod: string, node: string, why: BindingRefusal, detail = ""): ApiError {
  const text = why === BindingRefusal.nodeBusy ? `node "${node}" is busy; retry` : `node "${node}" cannot take the pod: ${detail}`;
  const causes: StatusCause[] = [{ reason: why, message: text, field: "target.name" }];
  return new ApiError(
    failure(409, Reason.Conflict, `Operation cannot be fulfilled on pods/binding "${pod}": ${text}`, { name: pod, group: "", kind: "pods/binding", causes }),
  );
}

/** The typed cause of a refused binding, or undefined for any other error. */
export function bindingRefusalOf(err: unknown): BindingRefusal | undefined {
  if (!(err instanceof ApiError) || err.reason !== Reason.Conflict) return undefined;
  const r = err.status.details?.causes[0]?.reason;
  return r === BindingRefusal.nodeBusy || r === BindingRefusal.nodeCannotTakePod ? r : undefined;
}
