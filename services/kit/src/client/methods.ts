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
