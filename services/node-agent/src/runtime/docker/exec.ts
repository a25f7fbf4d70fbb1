import type { Duplex } from "node:stream";
import type Dockerode from "dockerode";
import type { ExecResult } from "../runtime.js";
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
