import {
  BindRequest,
  CreateRequest,
  DeleteCollectionRequest,
  DeleteRequest,
  EvictRequest,
  GetRequest,
  GetScaleRequest,
  ListRequest,
  PatchRequest,
  UpdateRequest,
  UpdateScaleRequest,
} from "../gen/choreo/api/v1/api.js";
import type { Status } from "../gen/choreo/meta/v1/meta.js";

/** A protobuf message codec as ts-proto generates it. */
export interface Codec<T> {
  encode(message: T): { finish(): Uint8Array };
  decode(input: Uint8Array): T;
}

/** The request codec of every unary api method served over NATS. */
export const METHODS = {
  get: GetRequest as Codec<GetRequest>,
  list: ListRequest as Codec<ListRequest>,
  create: CreateRequest as Codec<CreateRequest>,
  update: UpdateRequest as Codec<UpdateRequest>,
  updateStatus: UpdateRequest as Codec<UpdateRequest>,
  patch: PatchRequest as Codec<PatchRequest>,
  delete: DeleteRequest as Codec<DeleteRequest>,
  deleteCollection: DeleteCollectionRequest as Codec<DeleteCollectionRequest>,
  bind: BindRequest as Codec<BindRequest>,
  evict: EvictRequest as Codec<EvictRequest>,
  getScale: GetScaleRequest as Codec<GetScaleRequest>,
  updateScale: UpdateScaleRequest as Codec<UpdateScaleRequest>,
} as const;

/** The name of a unary api method. */
export type Method = keyof typeof METHODS;

/**
 * `choreo.api.createToken`: a ServiceAccount token (POST
 * .../serviceaccounts/NAME/token, authentication.k8s.io/v1 TokenRequest)
 * over NATS, for node agents writing pods' projected tokens. Not one of
 * {@link METHODS}: there is no protobuf TokenRequest in the api's Reply, so
 * the request and the answer are JSON ({@link CreateTokenRequest},
 * {@link CreateTokenReply}); the api serves it beside the unary methods,
 * with their authentication and authorization (`create serviceaccounts/token`).
 */
export const CREATE_TOKEN = "createToken";

/** A TokenRequest as Kubernetes' JSON (spec asked; status answered). */
export interface TokenRequestJson {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  spec: {
    audiences?: string[];
    expirationSeconds?: number;
    boundObjectRef?: { kind: string; apiVersion: string; name: string; uid: string };
  };
  status?: { token: string; expirationTimestamp: string };
}

/** The request of {@link CREATE_TOKEN}: the ServiceAccount (namespace, name) and the TokenRequest body. */
export interface CreateTokenRequest {
  namespace: string;
  name: string;
  tokenRequest: TokenRequestJson;
}

/** The answer of {@link CREATE_TOKEN}: the TokenRequest with its status, or the Status of the refusal. */
export type CreateTokenReply = { tokenRequest: TokenRequestJson } | { status: Status };
