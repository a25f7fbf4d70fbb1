import fs from "node:fs";

/** Options of reading one run's log (the runtime has resolved container and run). */
export interface ReadLogOptions {
  tailLines?: number | undefined;
  sinceSeconds?: number | undefined;
  timestamps: boolean;
  follow: boolean;
  /** Whether the run may still write (a followed log ends once it does not and all is read). */
  running: () => boolean;
  /** Only this stream's lines (attach: stdout and stderr apart); undefined: both. */
  stream?: "stdout" | "stderr" | undefined;
  /** Only what the live log holds from this byte offset on (attach: from its start); tailLines and sinceSeconds then do not apply. */
  fromOffset?: number | undefined;
}

/** A run's log files, oldest first: `<log>.<maxFiles-1>` … `<log>.1`, `<log>`. */
export function logFiles(log: string, maxFiles: number): string[] {
  const out: string[] = [];
  for (let i = maxFiles - 1; i >= 1; i--) if (fs.existsSync(`${log}.${i}`)) out.push(`${log}.${i}`);
  if (fs.existsSync(log)) out.push(log);
  return out;
}

/**
 * Rotates `log` when it passed `maxBytes`: older files shift up (the
 * oldest beyond `maxFiles` goes), the log is copied to `.1` and truncated.
 * The timestampers append (O_APPEND), so they write on at offset 0; lines
 * written between copy and truncate are lost (copytruncate's known cost).
 */
export function rotateIfNeeded(log: string, maxBytes: number, maxFiles: number): boolean {
  let size: number;
  try {
    size = fs.statSync(log).size;
  } catch {
    return false;
  }
  if (size <= maxBytes) return false;
  if (maxFiles > 1) {
    fs.rmSync(`${log}.${maxFiles - 1}`, { force: true });
    for (let i = maxFiles - 2; i >= 1; i--) if (fs.existsSync(`${log}.${i}`)) fs.renameSync(`${log}.${i}`, `${log}.${i + 1}`);
    fs.copyFileSync(log, `${log}.1`);
  }
  fs.truncateSync(log, 0);
  return true;
}

/** One CRI log line `<RFC3339Nano> <stream> <F|P> <content>` as the api returns it (undefined: not of `stream`, when given). */
export function formatLine(line: string, timestamps: boolean, sinceMs: number | undefined, stream?: string): string | undefined {
  const a = line.indexOf(" ");
  const b = line.indexOf(" ", a + 1);
  const c = line.indexOf(" ", b + 1);
  if (a < 0 || b < 0 || c < 0) return undefined;
  const ts = line.slice(0, a);
  if (stream !== undefined && line.slice(a + 1, b) !== stream) return undefined;
  if (sinceMs !== undefined && Date.parse(ts) < sinceMs) return undefined;
  const content = line.slice(c + 1);
  const eol = line.slice(b + 1, c) === "P" ? "" : "\n";
  return timestamps ? `${ts} ${content}${eol}` : `${content}${eol}`;
}

/**
 * A run's log (rotated files included): the last `tailLines` lines of
 * those since `sinceSeconds`, then, when following, what is appended until
 * the run ended and all of it was read, or `signal` aborts.
 */
export async function* readLog(log: string, maxFiles: number, o: ReadLogOptions, signal: AbortSignal): AsyncGenerator<Uint8Array> {
  const sinceMs = o.sinceSeconds !== undefined ? Date.now() - o.sinceSeconds * 1000 : undefined;
  let offset = o.fromOffset ?? 0;
  const lines: string[] = [];
  for (const f of o.fromOffset === undefined ? logFiles(log, maxFiles) : []) {
    const buf = fs.readFileSync(f);
    const text = buf.toString("utf8");
    const whole = f === log ? text.slice(0, text.lastIndexOf("\n") + 1) : text;
    if (f === log) offset = Buffer.byteLength(whole);
    for (const l of whole.split("\n")) if (l) lines.push(l);
  }
  const picked = o.tailLines !== undefined ? lines.slice(Math.max(0, lines.length - o.tailLines)) : lines;
  const first = picked
    .map((l) => formatLine(l, o.timestamps, sinceMs, o.stream))
    .filter((x) => x !== undefined)
    .join("");
  if (first) yield Buffer.from(first);
  if (!o.follow) return;
  const format = (chunk: string): string =>
    chunk
      .split("\n")
      .filter(Boolean)
      .map((l) => formatLine(l, o.timestamps, undefined, o.stream))
      .filter((x) => x !== undefined)
      .join("");
  for (;;) {
    const ended = !o.running(); // before reading: an ended run's log is complete on disk
    const { chunk, next } = readFrom(log, offset);
    offset = next;
    const out = format(chunk);
    if (out) yield Buffer.from(out);
    if (signal.aborted || (ended && !chunk)) return;
    await changeOrTimeout(log, 500, signal);
  }
}

/** Whole lines of `file` from `offset` on, and the offset after them (0 again after a truncation). */
function readFrom(file: string, offset: number): { chunk: string; next: number } {
  let fd: number;
  try {
    fd = fs.openSync(file, "r");
  } catch {
    return { chunk: "", next: offset };
  }
  try {
    const size = fs.fstatSync(fd).size;
    if (size < offset) offset = 0; // rotated: copy + truncate
    if (size === offset) return { chunk: "", next: offset };
    const buf = Buffer.alloc(size - offset);
    const n = fs.readSync(fd, buf, 0, buf.length, offset);
    const end = buf.subarray(0, n).lastIndexOf(10) + 1;
    return { chunk: buf.subarray(0, end).toString("utf8"), next: offset + end };
  } finally {
    fs.closeSync(fd);
  }
}

/** Resolves when `file` changes, after `ms`, or on abort, whichever comes first. */
function changeOrTimeout(file: string, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    let watcher: fs.FSWatcher | undefined;
    const done = (): void => {
      clearTimeout(timer);
      watcher?.close();
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    try {
      watcher = fs.watch(file, done);
    } catch {
      // not there yet: the timeout looks again
    }
  });
}
