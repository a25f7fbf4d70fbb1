// The bytes an object was just written with, for the NATS door's answer.
//
// The store encodes every object it writes (for Redis and the event log); the
// NATS door then encoded the very object again for its reply (3.7 % of the
// api's busy time in bench:scale). The store notes each written object's
// bytes and revision here, keyed by the object (a WeakMap: nothing is kept
// once the object is gone), and the door answers a write from them
// (event-revision.ts writes the resourceVersion in).
//
// This holds only while nothing changes the object between its write and the
// answer: the verbs the door answers this way (create, update, updateStatus,
// bind) return the object their last write wrote, unchanged but for the
// resourceVersion the store sets. A changed resourceVersion (another write of
// the same object) is noticed here and the door encodes.
import type { Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import { replyWithWrittenObject } from "../../storage/event-revision.js";

interface Written {
  /** The Object as encoded for the write (resourceVersion ""). */
  object: Uint8Array;
  revision: number;
}

const written = new WeakMap<object, Written>();

/** Notes that `value` (a kind's message, as wrapped in an Object) was written as `object` at `revision`. */
export function noteWritten(value: object, object: Uint8Array, revision: number): void {
  written.set(value, { object, revision });
}

/**
 * The encoded Reply { object: `o` } from the bytes its value was written
 * with, or undefined (not noted, its resourceVersion not the write's, bytes
 * not as the store writes them): the caller encodes.
 */
export function writtenReply(o: ApiObject | undefined): Uint8Array | undefined {
  const value = o?.kind?.value;
  const w = value && written.get(value);
  if (!w || value.metadata?.resourceVersion !== String(w.revision)) return undefined;
  return replyWithWrittenObject(w.object, w.revision);
}
