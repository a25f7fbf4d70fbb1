import fs from "node:fs";
import net from "node:net";
import { PassThrough, Readable } from "node:stream";
import type { StreamOptions, StreamSession } from "../runtime.js";
import { readLog } from "./logs.js";
import { stdinPaths } from "./scripts.js";
import { readRunExit, runPaths } from "./state.js";

/** The run an attach connects to (the runtime has checked that it runs). */
export interface AttachTarget {
  /** The container's state dir and run number. */
  dir: string;
  n: number;
  maxFiles: number;
  /** The container's `stdin` and `stdinOnce`. */
  stdin: boolean;
  stdinOnce: boolean;
  /** Whether the run may still write (the session ends once it does not and its log is read). */
  running: () => boolean;
}

/**
 * Connects to run `n` of a container (pods/attach, no tty): stdout and
 * stderr are what the run writes from now on, read apart from its log
 * (`readLog` following from its current end); stdin (when asked and the container
 * has `stdin`) goes to the run's FIFO. `exit` is the run's exit code when
 * it ended, 0 when the session was killed (a detach: the container runs
 * on). The end of the session's stdin ends the session, as Docker's attach
 * does; with `stdinOnce` it kills the FIFO's holder instead (once the
 * attach closes its end too, the command reads EOF) and the session ends
 * with the container.
 */
export function attachRun(t: AttachTarget, opts: StreamOptions): StreamSession {
  const abort = new AbortController();
  const log = runPaths(t.dir, t.n).log;
  // Where the log is now, taken before anything is written to stdin (the streams read lazily).
  const fromOffset = logSize(log);
  const follow = (stream: "stdout" | "stderr"): Readable =>
    Readable.from(readLog(log, t.maxFiles, { fromOffset, timestamps: false, follow: true, running: t.running, stream }, abort.signal), {
      objectMode: false,
    });
  const stdout = follow("stdout");
  const stderr = follow("stderr");
  const ended = (s: Readable): Promise<void> =>
    new Promise((resolve) => {
      s.once("end", resolve);
      s.once("close", resolve);
      s.once("error", () => resolve());
    });
  const exit = Promise.all([ended(stdout), ended(stderr)]).then(() => (abort.signal.aborted ? 0 : (readRunExit(t.dir, t.n)?.exitCode ?? 0)));
  // Without stdinOnce the end of the session's stdin ends the session (Docker's attach does so); with it, the container's exit does.
  const fifo = opts.stdin && t.stdin ? openFifo(t, () => t.stdinOnce || abort.abort()) : undefined;
  return {
    stdin: fifo?.stdin,
    stdout,
    stderr,
    resize: () => undefined,
    exit,
    kill() {
      if (abort.signal.aborted) return;
      abort.abort();
      fifo?.detach();
    },
  };
}

/**
 * The session's end of the run's stdin FIFO: opened write-only and
 * non-blocking (a socket of the event loop: a command not reading slows the
 * caller, it blocks no thread), ENXIO when no one reads it any more.
 */
function openFifo(t: AttachTarget, onEnd: () => void): { stdin: PassThrough; detach(): void } {
  const paths = stdinPaths(t.dir, t.n);
  const stdin = new PassThrough();
  let sock: net.Socket | undefined;
  try {
    const fd = fs.openSync(paths.fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
    sock = new net.Socket({ fd, readable: false, writable: true });
    // The command may have closed its stdin or exited: its bytes are then dropped, as Docker does.
    sock.on("error", () => stdin.resume());
    stdin.pipe(sock);
  } catch {
    stdin.resume(); // the container's stdin is gone (closed by a stdinOnce attach, or the run ended): input is dropped
  }
  const closeForGood = (): void => {
    if (t.stdinOnce) killHolder(paths.holder);
  };
  stdin.once("end", () => {
    closeForGood();
    if (!sock) return onEnd();
    sock.once("close", onEnd);
    sock.once("finish", () => sock?.destroy());
  });
  return {
    stdin,
    detach() {
      stdin.unpipe();
      stdin.resume();
      sock?.destroy();
      closeForGood();
    },
  };
}

/** The log's size; 0 when it is not there yet. */
function logSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

/** Kills the process holding the FIFO open (the shim's `sleep`), if it still runs. */
function killHolder(file: string): void {
  try {
    const pid = Number(fs.readFileSync(file, "utf8").trim());
    const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
    if (pid > 0 && cmd.startsWith("sleep\0")) process.kill(pid, "SIGTERM");
  } catch {
    // gone already
  }
}
