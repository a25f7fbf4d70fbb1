// The bus: NATS connection, the JetStream event log, its subjects and codec.
export { EVENT_PREFIX, EVENT_STREAM, ALL_EVENTS, apiSubject, token, untoken, eventSubject, resourceFilter, podsOnNodeFilter } from "./subjects.js";
export { ensureEventStream, streamState, connectBus } from "./stream.js";
export type { EventStreamOptions } from "./stream.js";
export { encodeEvent, decodeEvent, consumeEvents } from "./events.js";
export type { ConsumeOptions } from "./events.js";
