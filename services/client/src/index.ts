// @choreo/client: typed CRUD and watch() over NATS, HTTP or gRPC, and subscribe() to the event stream (NATS).
export { ChoreoClient, TypedClient, connectClient, transportOfUrl } from "./client.js";
export type { ConnectOptions, WatchOptions } from "./client.js";
export { NatsApiTransport } from "./nats-transport.js";
export { HttpTransport } from "./http-transport.js";
export type { HttpTransportOptions } from "./http-transport.js";
export { GrpcTransport } from "./grpc-transport.js";
export type { GrpcTransportOptions } from "./grpc-transport.js";
export { readKubeconfig } from "./kubeconfig.js";
export type { KubeconfigConnection } from "./kubeconfig.js";
export type { ApiTransport, TransportName } from "./transport.js";
export { subscribe, eventFilter } from "./subscribe.js";
export type { ChangeEvent, ChangeType, SubscribeOptions } from "./subscribe.js";
export { ApiError, isExpired, isNotFound, isConflict, isAlreadyExists } from "@choreo/kit";
export type { AnyObject, KindCase, KindValue, KindInfo } from "@choreo/kit";
