// A failed call as gRPC clients expect it: a status code, and Kubernetes'
// Status in the standard rich-error trailer `grpc-status-details-bin`
// (google.rpc.Status whose details hold the Status packed in an Any), and, as
// before, the Status bytes alone in `choreo-status-bin`.
import * as grpc from "@grpc/grpc-js";
import { BinaryReader, BinaryWriter } from "@bufbuild/protobuf/wire";
import { statusOf } from "@choreo/kit";
import { Status } from "@choreo/kit/gen/choreo/meta/v1/meta";

/** Metadata key carrying the encoded Kubernetes Status of a failed call (choreo's own, kept for older clients). */
export const STATUS_METADATA_KEY = "choreo-status-bin";
/** The standard trailer of rich errors: an encoded google.rpc.Status. */
export const STATUS_DETAILS_KEY = "grpc-status-details-bin";
/** The Any type URL of Kubernetes' Status in the details. */
export const STATUS_TYPE_URL = "type.googleapis.com/choreo.meta.v1.Status";

const CODES: Record<number, grpc.status> = {
  400: grpc.status.INVALID_ARGUMENT,
  401: grpc.status.UNAUTHENTICATED,
  403: grpc.status.PERMISSION_DENIED,
  404: grpc.status.NOT_FOUND,
  405: grpc.status.UNIMPLEMENTED,
  409: grpc.status.ABORTED,
  410: grpc.status.OUT_OF_RANGE,
  413: grpc.status.RESOURCE_EXHAUSTED,
  415: grpc.status.INVALID_ARGUMENT,
  422: grpc.status.INVALID_ARGUMENT,
  429: grpc.status.RESOURCE_EXHAUSTED,
  503: grpc.status.UNAVAILABLE,
  504: grpc.status.DEADLINE_EXCEEDED,
};

/** The gRPC code of a Kubernetes Status (AlreadyExists is its own code; 409 Conflict is ABORTED). */
export function grpcCodeOf(status: Status): grpc.status {
  return status.reason === "AlreadyExists" ? grpc.status.ALREADY_EXISTS : (CODES[status.code] ?? grpc.status.INTERNAL);
}

/** One google.protobuf.Any. */
export interface AnyMessage {
  typeUrl: string;
  value: Uint8Array;
}

/** google.rpc.Status { int32 code = 1; string message = 2; repeated google.protobuf.Any details = 3; }. */
export function encodeRpcStatus(code: number, message: string, details: readonly AnyMessage[]): Uint8Array {
  const w = new BinaryWriter();
  if (code !== 0) w.uint32(8).int32(code);
  if (message !== "") w.uint32(18).string(message);
  for (const d of details) {
    w.uint32(26).fork();
    w.uint32(10).string(d.typeUrl);
    w.uint32(18).bytes(d.value);
    w.join();
  }
  return w.finish();
}

/** Reads a google.rpc.Status; unknown fields are skipped. */
export function decodeRpcStatus(bytes: Uint8Array): { code: number; message: string; details: AnyMessage[] } {
  const r = new BinaryReader(bytes);
  const out = { code: 0, message: "", details: [] as AnyMessage[] };
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1 && wire === 0) out.code = r.int32();
    else if (field === 2 && wire === 2) out.message = r.string();
    else if (field === 3 && wire === 2) {
      const any = new BinaryReader(r.bytes());
      const d: AnyMessage = { typeUrl: "", value: new Uint8Array() };
      while (any.pos < any.len) {
        const [f, t] = any.tag();
        if (f === 1 && t === 2) d.typeUrl = any.string();
        else if (f === 2 && t === 2) d.value = any.bytes();
        else any.skip(t);
      }
      out.details.push(d);
    } else r.skip(wire);
  }
  return out;
}

/** The Kubernetes Status in a failed call's `grpc-status-details-bin`, if there is one. */
export function statusFromDetails(metadata: grpc.Metadata): Status | undefined {
  const raw = metadata.get(STATUS_DETAILS_KEY)[0];
  if (!(raw instanceof Uint8Array)) return undefined;
  const packed = decodeRpcStatus(raw).details.find((d) => d.typeUrl === STATUS_TYPE_URL);
  return packed ? Status.decode(packed.value) : undefined;
}

/** A gRPC error carrying the Status: the code mapped, the Status in both trailers. */
export function grpcError(err: unknown): grpc.ServiceError {
  const status = statusOf(err);
  const code = grpcCodeOf(status);
  const bytes = Status.encode(status).finish();
  const metadata = new grpc.Metadata();
  metadata.set(STATUS_METADATA_KEY, Buffer.from(bytes));
  metadata.set(STATUS_DETAILS_KEY, Buffer.from(encodeRpcStatus(code, status.message, [{ typeUrl: STATUS_TYPE_URL, value: bytes }])));
  return Object.assign(new Error(status.message), { code, details: status.message, metadata }) as grpc.ServiceError;
}
