// The api's gRPC door: the transport, its error trailers, health and reflection, and a reflection-built client.
export { GrpcTransport, type GrpcOptions } from "./serve-grpc.js";
export {
  grpcCodeOf,
  grpcError,
  statusFromDetails,
  decodeRpcStatus,
  encodeRpcStatus,
  STATUS_DETAILS_KEY,
  STATUS_METADATA_KEY,
  STATUS_TYPE_URL,
} from "./grpc-errors.js";
export type { AnyMessage } from "./grpc-errors.js";
export { API_SERVICE, GrpcHealth } from "./health.js";
export { addReflection, filesOfSet } from "./reflection.js";
export { reflect, type Reflected } from "./reflection-client.js";
export { serverCredentials, userOfCall, type GrpcTls } from "./credentials.js";
