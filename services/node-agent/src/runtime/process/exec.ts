import { spawn } from "node:child_process";
import { constants } from "node:os";
import type { ExecResult } from "../runtime.js";
import { signal } from "./proc.js";

/** Exec output beyond this is dropped (probes need the start of it). */
const MAX_OUTPUT = 64 * 1024;

/** The exit code of an exec that ran out of time (like timeout(1)). */
export const EXEC_TIMEOUT_EXIT = 124;

/**
 * Runs `command` in the namespaces, root and working dir of the container
 * process `pid` (`nsenter -t PID -m -u -i -n -p -r -w`) with the
 * container's environment. On timeout the whole process group (nsenter and
 * what it forked inside the container) is killed.
 */
export function execIn(pid: number, env: readonly (readonly [string, string])[], command: readonly string[], timeoutMs: number): Promise<ExecResult> {
  return new Promise((resolve) => {
    const args = ["-i", ...env.map(([k, v]) => `${k}=${v}`), "nsenter", "-t", String(pid), "-m", "-u", "-i", "-n", "-p", "-r", "-w", "--", ...command];
    const child = spawn("env", args, { detached: true, stdio: ["ignore", "pipe", "pipe"] });
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
