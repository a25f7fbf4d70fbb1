/**
 * The wire vocabulary of a log stream from a node agent to the api (the
 * whole exchange is described in services/node-agent/src/logs/README.md):
 *
 *   api ──request choreo.agent.<node>.logs (PodLogRequest)──▶ agent
 *   api ◀──reply: frame "ack" | "error" (Status)───────────── agent
 *   api ◀──<inbox>: frames "data" | "hb" | "end" | "error"──── agent
 *   api ──<inbox>.hb (frames consumed, decimal)──────────────▶ agent
 *   api ──<inbox>.cancel─────────────────────────────────────▶ agent
 *
 * Every message the agent sends carries its kind in the `Choreo-Log` header.
 */
import { headers, type Msg, type MsgHdrs } from "@nats-io/transport-node";
import { ApiError, failure } from "../api/errors.js";
import { Status } from "../gen/choreo/meta/v1/meta.js";

/** The header naming a frame's kind. */
export const LOG_FRAME_HEADER = "Choreo-Log";

/** Kinds of frames an agent sends. */
export const LogFrame = {
  /** The reply: the stream follows on the inbox. */
  Ack: "ack",
  /** Raw log bytes (at most {@link LOG_CHUNK_BYTES}). */
  Data: "data",
  /** Nothing to send for a while, but the agent is alive. */
  Heartbeat: "hb",
  /** The log ended (not followed, or the container stopped for good). */
  End: "end",
  /** A protobuf Status: the request failed (reply) or the stream did (inbox). */
  Error: "error",
} as const;
export type LogFrame = (typeof LogFrame)[keyof typeof LogFrame];

/** Each side sends a heartbeat this often when it has nothing else to say. */
export const LOG_HEARTBEAT_MS = 5_000;
/** Either side gives the stream up after this long without hearing from the other. */
export const LOG_IDLE_TIMEOUT_MS = 15_000;
/** Data frames the agent may send beyond what the api reported consumed. */
export const LOG_WINDOW = 64;
/** The largest data frame (well under NATS' default 1 MiB payload). */
export const LOG_CHUNK_BYTES = 32 * 1024;

/** Where the api reports progress (and liveness) of a stream to its agent. */
export function logHeartbeatSubject(inbox: string): string {
  return `${inbox}.hb`;
}

/** Where the api tells the agent to stop a stream (its HTTP client left). */
export function logCancelSubject(inbox: string): string {
  return `${inbox}.cancel`;
}

/** Headers of a frame of `kind`. */
export function logFrameHeaders(kind: LogFrame): MsgHdrs {
  const h = headers();
  h.set(LOG_FRAME_HEADER, kind);
  return h;
}

/** The kind of a received frame (`undefined` when the message is not one). */
export function logFrameOf(msg: Pick<Msg, "headers">): LogFrame | undefined {
  const kind = msg.headers?.get(LOG_FRAME_HEADER);
  return Object.values(LogFrame).find((k) => k === kind);
}

/** The payload of an error frame. */
export function encodeLogError(status: Status): Uint8Array {
  return Status.encode(status).finish();
}

/** The ApiError an error frame carries (a 500 when the payload does not decode). */
export function decodeLogError(data: Uint8Array): ApiError {
  try {
    return new ApiError(Status.decode(data));
  } catch (err) {
    return new ApiError(failure(500, "InternalError", "Internal error occurred: undecodable log stream error"), { cause: err });
  }
}
