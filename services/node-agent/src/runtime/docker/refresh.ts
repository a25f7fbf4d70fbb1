import type Dockerode from "dockerode";
import { statusCode } from "./engine.js";
import { findInstance, type PodRecord } from "./pod-record.js";
import { instanceFromInspect, later } from "./status.js";

/** How long a 137 exit of a memory-limited container waits for docker's late OOM flag (re-read every 100 ms). 300 ms was outrun under load (CI). */
const OOM_SETTLE_MS = 1_000;

/**
 * Re-reads one instance from inspect into whichever slot of the pod holds
 * it now (a restart may have moved it from current to previous meanwhile).
 * Readings only move forward ({@link later}); a 404 marks it removed.
 * `settleOom` (a die event): under load docker may record an OOM kill just
 * after the exit (its oom event then follows die), so a memory-limited
 * container's 137 exit is read again for up to a second and the first status
 * reported says OOMKilled rather than Error (the oom event's refresh mends a
 * later flag still). Returns whether the instance is still such an exit
 * without the flag (the caller reads it again later: an oom event can be
 * lost to a busy engine).
 */
export async function refreshInstance(docker: Dockerode, p: PodRecord, id: string, settleOom: boolean): Promise<boolean> {
  let info = await inspectOrUndefined(docker, id);
  const unsettled = (): boolean => !!info && info.State.ExitCode === 137 && !info.State.OOMKilled && (info.HostConfig.Memory ?? 0) > 0;
  if (settleOom && unsettled()) {
    for (const until = Date.now() + OOM_SETTLE_MS; unsettled() && Date.now() < until;) {
      await new Promise((r) => setTimeout(r, 100));
      info = (await inspectOrUndefined(docker, id)) ?? info;
    }
  }
  const found = findInstance(p, id);
  if (!found) return false;
  const before = found.c[found.slot]!;
  const read = info ? instanceFromInspect(info, before.restartCount) : { ...before, removed: true };
  found.c[found.slot] = later(before, read);
  return unsettled();
}

/** docker inspect; undefined when the container is gone. */
export async function inspectOrUndefined(docker: Dockerode, id: string): Promise<Dockerode.ContainerInspectInfo | undefined> {
  try {
    return await docker.getContainer(id).inspect();
  } catch (err) {
    if (statusCode(err) !== 404) throw err;
    return undefined;
  }
}
