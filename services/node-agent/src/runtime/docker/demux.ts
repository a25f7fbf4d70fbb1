/**
 * Splits docker's multiplexed stdout/stderr stream (non-TTY containers):
 * frames of an 8-byte header — stream type, 3 zero bytes, payload size as
 * a big-endian uint32 — and the payload. Feed chunks as they come; frames
 * split across chunks are reassembled.
 */
export class Demuxer {
  private pending: Buffer = Buffer.alloc(0);

  /** The payloads of the complete frames so far. */
  push(chunk: Uint8Array): Buffer[] {
    return this.pushTyped(chunk).map((f) => f.payload);
  }

  /** The complete frames so far with their stream type (1 stdout, 2 stderr). */
  pushTyped(chunk: Uint8Array): { type: number; payload: Buffer }[] {
    this.pending = this.pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.pending, chunk]);
    const out: { type: number; payload: Buffer }[] = [];
    while (this.pending.length >= 8) {
      const size = this.pending.readUInt32BE(4);
      if (this.pending.length < 8 + size) break;
      out.push({ type: this.pending[0] ?? 1, payload: this.pending.subarray(8, 8 + size) });
      this.pending = this.pending.subarray(8 + size);
    }
    return out;
  }
}

/** All payloads of a complete multiplexed buffer, concatenated. */
export function demuxAll(buf: Uint8Array): Buffer {
  return Buffer.concat(new Demuxer().push(buf));
}
