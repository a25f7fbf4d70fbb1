import type { Readable } from "node:stream";
import type Dockerode from "dockerode";
import { onAbort } from "@choreo/kit/lifecycle";
import type { LogOptions } from "../runtime.js";
import { Demuxer, demuxAll } from "./demux.js";

/**
 * A container instance's log as docker keeps it (json-file), with the
 * api's options: tail lines, since seconds, RFC 3339 nano timestamps
 * (docker's format is the kubelet's), follow until the container stops or
 * `signal` aborts. `tty` containers' logs are raw, the others multiplexed.
 */
export async function* containerLogs(
  docker: Dockerode,
  id: string,
  opts: Pick<LogOptions, "follow" | "tailLines" | "sinceSeconds" | "timestamps">,
  tty: boolean,
  signal: AbortSignal,
): AsyncGenerator<Uint8Array> {
  const base = {
    stdout: true,
    stderr: true,
    timestamps: opts.timestamps,
    ...(opts.tailLines !== undefined ? { tail: Math.max(0, opts.tailLines) } : {}),
    ...(opts.sinceSeconds !== undefined ? { since: Math.floor(Date.now() / 1000) - opts.sinceSeconds } : {}),
  };
  const container = docker.getContainer(id);
  if (!opts.follow) {
    const buf = await container.logs({ ...base, follow: false });
    const out = tty ? buf : demuxAll(buf);
    if (out.length > 0) yield new Uint8Array(out);
    return;
  }
  if (signal.aborted) return;
  const stream = (await container.logs({ ...base, follow: true })) as Readable;
  // An abort while the stream was being opened destroys it at once.
  const unlisten = onAbort(signal, () => stream.destroy());
  try {
    const demux = new Demuxer();
    for await (const chunk of stream) {
      const bytes = chunk as Buffer;
      for (const part of tty ? [bytes] : demux.push(bytes)) if (part.length > 0) yield new Uint8Array(part);
    }
  } catch (err) {
    // Destroying the stream on abort surfaces as an error: that is the normal end of a follow.
    if (!signal.aborted) throw err;
  } finally {
    unlisten();
    stream.destroy();
  }
}
