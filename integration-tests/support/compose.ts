// What the compose scenarios share: running a command to completion with its
// output kept for the failure message, and the reason to skip when this
// machine has no Docker engine or docker-compose.
import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { ROOT } from "./cluster.js";

const exec = promisify(execFile);

/** Whether a command exits 0 within 20 s. */
export const ok = (cmd: string, args: string[]): Promise<boolean> =>
  exec(cmd, args, { timeout: 20_000 }).then(
    () => true,
    () => false,
  );

/** Runs a command in the repository to completion (killed after `timeoutMs`); rejects with its output's tail. */
export function script(cmd: string, args: string[], env: Record<string, string> = {}, timeoutMs = 20 * 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr.on("data", (b: Buffer) => (out += b.toString()));
    const timer = setTimeout(() => child.kill("SIGTERM"), timeoutMs);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${cmd} ${args.join(" ")} failed (${signal ?? code}):\n${out.slice(-4000)}`));
    });
  });
}

/** Why a compose scenario cannot run here, or false. */
export async function composeSkipReason(): Promise<string | false> {
  if (!(await ok("docker", ["info"]))) return "no Docker engine answers (scripts/ensure-docker.sh starts one)";
  if (!(await ok("docker-compose", ["version"]))) return "docker-compose is not installed (scripts/ensure-deps.sh installs it)";
  return false;
}
