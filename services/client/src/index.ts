// @choreo/client: typed CRUD over NATS and subscribe() to the event stream.
export { ChoreoClient, connectClient } from "./client.js";
export type { ConnectOptions } from "./client.js";
export { subscribe, eventFilter } from "./subscribe.js";
export type { ChangeEvent, ChangeType, SubscribeOptions } from "./subscribe.js";
export { ApiError, isExpired, isNotFound, isConflict, isAlreadyExists } from "@choreo/kit";
export type { AnyObject, KindCase, KindValue, KindInfo } from "@choreo/kit";
