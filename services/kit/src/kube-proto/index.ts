// Kubernetes protobuf (application/vnd.kubernetes.protobuf) ⇄ Kubernetes JSON:
// the envelope, the message transcoder, the watch framing.
export { decodeMessage, encodeMessage, k8sMessage, formatTime, formatMicroTime, parseTime, formatDuration, parseDuration } from "./codec.js";
export type { KubeJson, MessagePlan } from "./codec.js";
export {
  PROTOBUF,
  PROTOBUF_WATCH,
  MAGIC,
  messageOfKind,
  hasProtobuf,
  encodeObject,
  decodeObject,
  decodeUnknown,
  encodeWatchFrame,
  decodeWatchFrames,
  decodeWatchEvent,
} from "./envelope.js";
export type { Unknown } from "./envelope.js";
