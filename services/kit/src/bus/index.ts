// The bus: NATS connection, the JetStream event log, its subjects and codec.
export {
  EVENT_PREFIX,
  EVENT_STREAM,
  ALL_EVENTS,
  apiSubject,
  token,
  untoken,
  eventSubject,
  resourceFilter,
  podsOnNodeFilter,
  LIVE_PREFIX,
  POD_REPUBLISH,
  liveSubjectOf,
  agentSubject,
  agentLogsSubject,
  LOG_CHANNEL,
  agentExecSubject,
  agentPortForwardSubject,
  NOTICE_PREFIX,
  NOTICE_RESOURCES,
  noticeSubjectOf,
  noticeFilter,
} from "./subjects.js";
export { closeBus, drainSubscriptions, ensureEventStream, hasPodRepublish, streamState, connectBus, stopWhenBusClosed } from "./stream.js";
export type { EventStreamOptions } from "./stream.js";
export { encodeEvent, decodeEvent, consumeEvents, consumeEventRecords } from "./events.js";
export type { ConsumeOptions, EventRecord } from "./events.js";
export { followEvents } from "./follow.js";
export type { FollowOptions } from "./follow.js";
export {
  EVENT_SIGNATURE_HEADER,
  EventSigner,
  EventVerifier,
  eventKeyPaths,
  ensureEventKeys,
  loadEventSigner,
  loadEventVerifier,
  requireSignedEvents,
  signedEventsPolicy,
} from "./signing.js";
export type { SignedEventsPolicy } from "./signing.js";
export {
  STREAM_FRAME_HEADER,
  STREAM_CHANNEL_HEADER,
  STREAM_SEQ_HEADER,
  STREAM_INBOX_HEADER,
  newInbox,
  StreamFrame,
  STREAM_HEARTBEAT_MS,
  STREAM_IDLE_TIMEOUT_MS,
  STREAM_WINDOW,
  STREAM_CHUNK_BYTES,
  streamFrameHeaders,
  streamFrameOf,
  encodeStreamStatus,
  decodeStreamError,
  BusStream,
} from "./bus-stream.js";
export type { BusStreamOptions, StreamEvent, StreamStop } from "./bus-stream.js";
export { openBusStream } from "./open-stream.js";
export type { OpenBusStreamOptions } from "./open-stream.js";
export { NATS_USERS_SUBJECT, requestNatsUser, serveNatsUsers } from "./nats-user-provisioner.js";
export type { NatsUserOwner, NatsUserReply, NatsUserRequest } from "./nats-user-provisioner.js";
