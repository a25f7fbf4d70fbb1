import { PassThrough, type Duplex } from "node:stream";
import type Dockerode from "dockerode";
import type { ExecResult, StreamOptions, StreamSession } from "../runtime.js";
import { Demuxer } from "./demux.js";

/** Output kept of an exec (the kubelet keeps 10 KiB of a probe's). */
const MAX_OUTPUT = 10 * 1024;

/** The exit code reported when the command ran out of time (coreutils `timeout`'s). */
export const EXEC_TIMEOUT_EXIT_CODE = 124;

/**
 * Runs `command` in a running container, stdout and stderr combined. On
 * timeout the process is killed by its host pid (the agent runs in the
 * host's pid namespace; elsewhere the kill is best effort) and the result
 * carries exit code 124.
 */
export async function execIn(docker: Dockerode, id: string, command: readonly string[], timeoutMs: number): Promise<ExecResult> {
  const exec = await docker.getContainer(id).exec({ Cmd: [...command], AttachStdout: true, AttachStderr: true });
  const stream = (await exec.start({ hijack: true, stdin: false })) as Duplex;
  const demux = new Demuxer();
  let output = "";
  stream.on("data", (chunk: Buffer) => {
    for (const part of demux.push(chunk)) if (output.length < MAX_OUTPUT) output += part.toString("utf8");
  });
  let timer: NodeJS.Timeout | undefined;
  const finished = await new Promise<boolean>((resolve) => {
    stream.once("end", () => resolve(true));
    stream.once("close", () => resolve(true));
    stream.once("error", () => resolve(true));
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  clearTimeout(timer);
  output = output.slice(0, MAX_OUTPUT);
  if (!finished) {
    await killExec(exec);
    stream.destroy();
    return { exitCode: EXEC_TIMEOUT_EXIT_CODE, output: `${output}command timed out after ${timeoutMs}ms\n` };
  }
  return { exitCode: await exitCodeOf(exec), output };
}

/** The exec's exit code; the engine records it a moment after the stream ends. */
async function exitCodeOf(exec: Dockerode.Exec): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const info = await exec.inspect();
    if (!info.Running && info.ExitCode !== null) return info.ExitCode;
    await new Promise((r) => setTimeout(r, 20));
  }
  return -1;
}

async function killExec(exec: Dockerode.Exec): Promise<void> {
  try {
    const { Pid } = await exec.inspect();
    if (Pid > 0) process.kill(Pid, "SIGKILL");
  } catch {
    // already gone, or not in our pid namespace
  }
}

/**
 * Runs `command` in a running container with its streams connected
 * (pods/exec): Docker's exec with a hijacked connection, stdin when asked
 * (closing `stdin` half-closes the connection: the process reads EOF), a
 * tty when asked (`resize` sets its size). stdout and stderr are split out
 * of Docker's multiplexed stream with back-pressure: a slow reader pauses
 * the connection. `exit` is the exec's exit code, read once the output ended.
 */
export async function execStreamIn(docker: Dockerode, id: string, command: readonly string[], opts: StreamOptions): Promise<StreamSession> {
  const exec = await docker.getContainer(id).exec({
    Cmd: [...command],
    AttachStdin: opts.stdin,
    AttachStdout: true,
    AttachStderr: true,
    Tty: opts.tty,
  });
  const conn = (await exec.start({ hijack: true, stdin: opts.stdin, Tty: opts.tty })) as Duplex;
  return sessionOf(conn, opts, {
    resize: (w, h) => void exec.resize({ w, h }).catch(() => undefined),
    kill: () => void killExec(exec),
    exit: () => exitCodeOf(exec),
  });
}

/**
 * Connects to a running container's main process (pods/attach): Docker's
 * attach with a hijacked connection. `exit` resolves with 0 when the
 * process ends or the session is killed (the attach detaches; the
 * container keeps running).
 */
export async function attachTo(docker: Dockerode, id: string, opts: StreamOptions): Promise<StreamSession> {
  const container = docker.getContainer(id);
  const conn = (await container.attach({ stream: true, stdin: opts.stdin, stdout: true, stderr: true, hijack: true })) as Duplex;
  return sessionOf(conn, opts, {
    resize: (w, h) => void container.resize({ w, h }).catch(() => undefined),
    kill: () => undefined,
    exit: async () => 0,
  });
}

/** A session over a hijacked Docker connection (multiplexed unless tty). */
function sessionOf(conn: Duplex, opts: StreamOptions, ops: { resize(w: number, h: number): void; kill(): void; exit(): Promise<number> }): StreamSession {
  const stdout = new PassThrough();
  const stderr = opts.tty ? undefined : new PassThrough();
  const demux = new Demuxer();
  const waitDrain = (s: PassThrough): void => {
    conn.pause();
    s.once("drain", () => conn.resume());
  };
  conn.on("data", (chunk: Buffer) => {
    if (opts.tty) {
      if (!stdout.write(chunk)) waitDrain(stdout);
      return;
    }
    for (const { type, payload } of demux.pushTyped(chunk)) {
      const target = type === 2 && stderr ? stderr : stdout;
      if (!target.write(payload)) waitDrain(target);
    }
  });
  const ended = new Promise<void>((resolve) => {
    const done = (): void => {
      stdout.end();
      stderr?.end();
      resolve();
    };
    conn.once("end", done);
    conn.once("close", done);
    conn.once("error", done);
  });
  let killed = false;
  let stdin: PassThrough | undefined;
  if (opts.stdin) {
    // The caller writes to a stream of its own: ending it half-closes the connection, and writes after a kill are dropped.
    stdin = new PassThrough();
    stdin.on("data", (b: Buffer) => {
      if (!killed && !conn.destroyed && !conn.write(b)) {
        stdin?.pause();
        conn.once("drain", () => stdin?.resume());
      }
    });
    stdin.on("end", () => {
      if (!conn.destroyed) conn.end();
    });
  }
  return {
    stdin,
    stdout,
    stderr,
    resize: ops.resize,
    exit: ended.then(() => (killed ? EXEC_KILLED_EXIT_CODE : ops.exit())),
    kill() {
      if (killed) return;
      killed = true;
      ops.kill();
      conn.destroy();
    },
  };
}

/** The exit code reported for a session ended by `kill` (SIGKILL's). */
export const EXEC_KILLED_EXIT_CODE = 137;
