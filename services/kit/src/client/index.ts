// The api client: NATS request-reply with protobuf, Status errors as ApiError.
export { ApiClient, TypedClient, bindRequest, retryOnConflict } from "./api-client.js";
export type { ListOptions, PatchType } from "./api-client.js";
export { CREATE_TOKEN, METHODS } from "./methods.js";
export type { Method, Codec, CreateTokenReply, CreateTokenRequest, TokenRequestJson } from "./methods.js";
