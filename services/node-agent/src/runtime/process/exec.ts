import { spawn } from "node:child_process";
import { constants } from "node:os";
import fs from "node:fs";
import { RuntimeRequestError, type ExecResult, type StreamOptions, type StreamSession } from "../runtime.js";
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
 * stdin piped when asked and stdout and stderr streamed (pods/exec). No
 * tty: the process runtime has no terminal to give yet (a RuntimeRequestError
 * says so). `kill` kills the whole process group.
 */
export function execStreamIn(pid: number, spec: ExecSpecSource & { dir: string }, command: readonly string[], opts: StreamOptions): StreamSession {
  if (opts.tty) throw new RuntimeRequestError("a tty is not supported by the process runtime yet: exec without -t, or run the pod on a docker node");
  const file = execSpecPath(spec.dir);
  if (!fs.existsSync(file)) writeExecSpec(spec);
  const child = spawn(HELPER, ["join", String(pid), file, "--", ...command], {
    detached: true,
    stdio: [opts.stdin ? "pipe" : "ignore", "pipe", "pipe"],
    env: {},
  });
  const { stdout, stderr } = child;
  if (!stdout || !stderr) throw new Error("choreo-exec started without its output pipes");
  // A process that left before reading its stdin: writes fail with EPIPE, which is not the session's error.
  child.stdin?.on("error", () => undefined);
  const exit = new Promise<number>((resolve) => {
    child.on("error", () => resolve(126));
    child.on("close", (code, sig) => resolve(code ?? 128 + (sig ? constants.signals[sig] : 0)));
  });
  return {
    stdin: child.stdin ?? undefined,
    stdout,
    stderr,
    resize: () => undefined,
    exit,
    kill() {
      if (child.pid && child.exitCode === null && child.signalCode === null) signal(-child.pid, "SIGKILL");
    },
  };
}
