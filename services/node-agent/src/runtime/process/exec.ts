import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import { constants } from "node:os";
import fs from "node:fs";
import { Writable } from "node:stream";
import { type ExecResult, type StreamOptions, type StreamSession } from "../runtime.js";
import { HELPER } from "./helper.js";
import { signal } from "./proc.js";
import { execSpecPath, writeExecSpec, type ExecSpecSource } from "./scripts.js";

/** Exec output beyond this is dropped (probes need the start of it). */
const MAX_OUTPUT = 64 * 1024;

/** The exit code of an exec that ran out of time (like timeout(1)). */
export const EXEC_TIMEOUT_EXIT = 124;

/**
 * Runs `command` in the namespaces and root of the container process `pid`,
 * in the container's working dir, with its environment and its confinement
 * (capabilities, no_new_privs, seccomp): `choreo-exec join PID exec.spec --
 * command…`. The env is read from the container's exec.spec (written here
 * for a container started before there was one), never from a command
 * line; the command follows `--`. On timeout the whole process group
 * (choreo-exec and what it forked inside the container) is killed.
 */
export function execIn(pid: number, spec: ExecSpecSource & { dir: string }, command: readonly string[], timeoutMs: number): Promise<ExecResult> {
  return new Promise((resolve) => {
    const file = execSpecPath(spec.dir);
    if (!fs.existsSync(file)) writeExecSpec(spec);
    const child = spawn(HELPER, ["join", String(pid), file, "--", ...command], { detached: true, stdio: ["ignore", "pipe", "pipe"], env: {} });
    const chunks: Buffer[] = [];
    let size = 0;
    const collect = (b: Buffer): void => {
      if (size >= MAX_OUTPUT) return;
      chunks.push(b.subarray(0, MAX_OUTPUT - size));
      size += b.length;
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid) signal(-child.pid, "SIGKILL");
    }, timeoutMs);
    const finish = (code: number, extra = ""): void => {
      clearTimeout(timer);
      resolve({ exitCode: code, output: Buffer.concat(chunks).toString("utf8") + extra });
    };
    child.on("error", (err) => finish(126, err.message));
    child.on("close", (code, sig) => {
      if (timedOut) finish(EXEC_TIMEOUT_EXIT, `command timed out after ${timeoutMs}ms`);
      else finish(code ?? 128 + (sig ? constants.signals[sig] : 0));
    });
  });
}

/**
 * Runs `command` in the container of process `pid` as `execIn` does, with
 * stdin piped when asked and stdout and stderr streamed (pods/exec). With a
 * tty, `execTtyIn`. `kill` kills the whole process group.
 */
export function execStreamIn(pid: number, spec: ExecSpecSource & { dir: string }, command: readonly string[], opts: StreamOptions): StreamSession {
  if (opts.tty) return execTtyIn(pid, spec, command, opts);
  const child = spawnJoin(["join", String(pid), execSpecOf(spec), "--", ...command], [opts.stdin ? "pipe" : "ignore", "pipe", "pipe"]);
  const { stdout, stderr } = child;
  if (!stdout || !stderr) throw new Error("choreo-exec started without its output pipes");
  return { stdin: child.stdin ?? undefined, stdout, stderr, resize: () => undefined, exit: exitOf(child), kill: () => killGroup(child) };
}

/**
 * `execStreamIn` with a terminal: `choreo-exec join --tty PID exec.spec --
 * command…` gives the command a pty as its controlling terminal and relays
 * it: stdin (when asked) goes to the terminal, the terminal (stdout and
 * stderr merged, as a tty does) comes on stdout, there is no stderr.
 * `resize` writes "COLS ROWS\n" on the helper's fd 3, which sets the
 * terminal's size (SIGWINCH to the command). `kill` kills choreo-exec's
 * process group; the command, in a session of its own, dies with it
 * (parent-death signal).
 */
function execTtyIn(pid: number, spec: ExecSpecSource & { dir: string }, command: readonly string[], opts: StreamOptions): StreamSession {
  const child = spawnJoin(["join", "--tty", String(pid), execSpecOf(spec), "--", ...command], [opts.stdin ? "pipe" : "ignore", "pipe", "ignore", "pipe"]);
  const stdout = child.stdout;
  const sizes = child.stdio[3];
  if (!stdout || !(sizes instanceof Writable)) throw new Error("choreo-exec started without its output and size pipes");
  sizes.on("error", () => undefined); // written after the helper left: EPIPE
  return {
    stdin: child.stdin ?? undefined,
    stdout,
    stderr: undefined,
    resize(width, height) {
      if (sizes.writable) sizes.write(`${Math.trunc(width)} ${Math.trunc(height)}\n`);
    },
    exit: exitOf(child),
    kill: () => killGroup(child),
  };
}

/** The container's exec.spec (written here for a container started before there was one). */
function execSpecOf(spec: ExecSpecSource & { dir: string }): string {
  const file = execSpecPath(spec.dir);
  if (!fs.existsSync(file)) writeExecSpec(spec);
  return file;
}

/** choreo-exec in a process group of its own (what `killGroup` kills), with an empty env. */
function spawnJoin(args: string[], stdio: StdioOptions): ChildProcess {
  const child = spawn(HELPER, args, { detached: true, stdio, env: {} });
  // A process that left before reading its stdin: writes fail with EPIPE, which is not the session's error.
  child.stdin?.on("error", () => undefined);
  return child;
}

/** Its exit code (128 + signal when killed; 126 when it could not start), once its streams closed. */
function exitOf(child: ChildProcess): Promise<number> {
  return new Promise<number>((resolve) => {
    child.on("error", () => resolve(126));
    child.on("close", (code, sig) => resolve(code ?? 128 + (sig ? constants.signals[sig] : 0)));
  });
}

function killGroup(child: ChildProcess): void {
  if (child.pid && child.exitCode === null && child.signalCode === null) signal(-child.pid, "SIGKILL");
}
