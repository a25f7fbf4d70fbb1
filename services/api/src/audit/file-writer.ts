// A bounded in-memory queue of lines drained into a file by one async loop,
// rotated by size into <file>.1 … <file>.N. enqueue never waits for the
// disk: when the queue is full the line is dropped and counted. A file whose
// last line has no newline (a process killed in the middle of a batch: the
// kernel gives up a large write on a fatal signal) has that torn line cut
// off when opened, so that the next line does not join it.
import { mkdir, open, rename, rm, stat, truncate, type FileHandle } from "node:fs/promises";
import path from "node:path";

export interface FileWriterOptions {
  file: string;
  /** Rotate before a write would take the file past this size; 0: never. */
  maxBytes: number;
  /** Rotated files kept (<file>.1 newest … <file>.N oldest); 0: the old file is removed at rotation. */
  maxBackups: number;
  /** Lines waiting for the disk; past it, lines are dropped. */
  maxQueue: number;
  onDrop(count: number): void;
  onWriteError(err: Error): void;
  /** A torn last line of `bytes` was cut off the file when it was opened. */
  onTornTail?(bytes: number): void;
}

/** Bytes written per write call at most, so one rotation check covers a bounded batch. */
const BATCH_BYTES = 256 * 1024;

export class FileWriter {
  private queue: string[] = [];
  private fh: FileHandle | undefined;
  private size = 0;
  private draining: Promise<void> | undefined;
  private closed = false;

  private constructor(private readonly o: FileWriterOptions) {}

  static async open(o: FileWriterOptions): Promise<FileWriter> {
    const w = new FileWriter(o);
    await mkdir(path.dirname(o.file), { recursive: true, mode: 0o700 });
    await w.openFile();
    return w;
  }

  /** Queues one line (without its newline). False when it was dropped. */
  enqueue(line: string): boolean {
    if (this.closed || this.queue.length >= this.o.maxQueue) {
      this.o.onDrop(1);
      return false;
    }
    this.queue.push(line);
    this.kick();
    return true;
  }

  /** Writes what is queued, then closes the file; later lines are dropped. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.draining) await this.draining;
    await this.fh?.close();
    this.fh = undefined;
  }

  private async openFile(): Promise<void> {
    this.fh = await open(this.o.file, "a", 0o600);
    this.size = (await stat(this.o.file)).size;
    const whole = await this.lastNewlineEnd();
    if (whole < this.size) {
      await truncate(this.o.file, whole);
      this.o.onTornTail?.(this.size - whole);
      this.size = whole;
    }
  }

  /** Where the file's last whole line ends (after its newline; 0 when it has none), read backwards from its end. */
  private async lastNewlineEnd(): Promise<number> {
    if (this.size === 0) return 0;
    const fh = await open(this.o.file, "r");
    try {
      const chunk = Buffer.alloc(64 * 1024);
      let end = this.size;
      while (end > 0) {
        const start = Math.max(0, end - chunk.length);
        const { bytesRead } = await fh.read(chunk, 0, end - start, start);
        const i = chunk.subarray(0, bytesRead).lastIndexOf(0x0a);
        if (i !== -1) return start + i + 1;
        end = start;
      }
      return 0;
    } finally {
      await fh.close();
    }
  }

  /** Writes all of `buf` (a write may take less than it is given). */
  private async writeAll(fh: FileHandle, buf: Buffer): Promise<void> {
    let off = 0;
    while (off < buf.length) off += (await fh.write(buf, off, buf.length - off)).bytesWritten;
  }

  private async drain(): Promise<void> {
    while (this.queue.length && this.fh) {
      const batch = this.takeBatch();
      const buf = Buffer.from(batch);
      const bytes = buf.length;
      try {
        if (this.o.maxBytes > 0 && this.size > 0 && this.size + bytes > this.o.maxBytes) await this.rotate();
        if (!this.fh) throw new Error(`${this.o.file} not open`);
        await this.writeAll(this.fh, buf);
        this.size += bytes;
      } catch (err) {
        this.o.onWriteError(err as Error);
        this.o.onDrop(batch.split("\n").length - 1);
      }
    }
  }

  private kick(): void {
    if (this.draining) return;
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
      // Lines queued between the loop's last look and now.
      if (this.queue.length && this.fh) this.kick();
    });
  }

  /** Lines from the head of the queue: at least one, at most BATCH_BYTES and what the current file has room for. */
  private takeBatch(): string {
    const room = this.o.maxBytes > 0 ? this.o.maxBytes - this.size : Infinity;
    let n = 0;
    let bytes = 0;
    while (n < this.queue.length) {
      const b = Buffer.byteLength(this.queue[n]) + 1;
      if (n > 0 && (bytes + b > BATCH_BYTES || bytes + b > room)) break;
      bytes += b;
      n++;
    }
    return this.queue.splice(0, n).join("\n") + "\n";
  }

  /** <file>.N-1 → <file>.N … <file> → <file>.1; the oldest beyond maxBackups removed. */
  private async rotate(): Promise<void> {
    await this.fh?.close();
    this.fh = undefined;
    const { file, maxBackups } = this.o;
    if (maxBackups === 0) await rm(file, { force: true });
    else {
      await rm(`${file}.${maxBackups}`, { force: true });
      for (let i = maxBackups - 1; i >= 1; i--) await rename(`${file}.${i}`, `${file}.${i + 1}`).catch(ignoreMissing);
      await rename(file, `${file}.1`).catch(ignoreMissing);
    }
    await this.openFile();
  }
}

function ignoreMissing(err: NodeJS.ErrnoException): void {
  if (err.code !== "ENOENT") throw err;
}
