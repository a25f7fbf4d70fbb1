import type Dockerode from "dockerode";
import { LABELS } from "../../net/types.js";

/** The HTTP status of a dockerode error (404 no such object, 409 conflict, 304 not modified). */
export function statusCode(err: unknown): number | undefined {
  const code = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === "number" ? code : undefined;
}

/** docker's message of a failed request (its JSON `message`), else the error's. */
export function dockerMessage(err: unknown): string {
  const json = (err as { json?: { message?: unknown } } | null)?.json;
  if (json && typeof json.message === "string") return json.message;
  const reason = (err as { reason?: unknown; message?: unknown } | null)?.message;
  return typeof reason === "string" ? reason.replace(/^\(HTTP code \d+\) [a-z ]+ - /, "").trim() : String(err);
}

/**
 * Creates a named container. When the name is taken: ours from an
 * interrupted earlier attempt (same pod uid) is reused; a dead leftover of
 * another pod is removed and the create retried; a live one is an error.
 */
export async function createOrTakeOver(docker: Dockerode, opts: Dockerode.ContainerCreateOptions, uid: string): Promise<Dockerode.Container> {
  try {
    return await docker.createContainer(opts);
  } catch (err) {
    if (statusCode(err) !== 409 || !opts.name) throw err;
  }
  const existing = docker.getContainer(opts.name);
  const info = await existing.inspect();
  if (info.Config.Labels?.[LABELS.podUid] === uid) return existing;
  if (info.State.Running) throw new Error(`container name ${opts.name} is in use by a running container of another pod`);
  await existing.remove({ force: true, v: true });
  return docker.createContainer(opts);
}

/** Starts a container; already started is fine. */
export async function startQuietly(container: Dockerode.Container): Promise<void> {
  try {
    await container.start();
  } catch (err) {
    if (statusCode(err) !== 304) throw err;
  }
}

/** docker stop with a grace period in seconds (SIGTERM, SIGKILL after it); stopped or gone is fine. */
export async function stopQuietly(docker: Dockerode, id: string, graceSeconds: number): Promise<void> {
  try {
    await docker.getContainer(id).stop({ t: Math.max(0, Math.ceil(graceSeconds)) });
  } catch (err) {
    const code = statusCode(err);
    if (code !== 304 && code !== 404) throw err;
  }
}

/** docker rm -f -v; gone is fine. */
export async function removeQuietly(docker: Dockerode, id: string): Promise<void> {
  try {
    await docker.getContainer(id).remove({ force: true, v: true });
  } catch (err) {
    const code = statusCode(err);
    // 409: removal already in progress.
    if (code !== 404 && code !== 409) throw err;
  }
}

/** Whether a Docker engine answers (`--runtime auto` picks docker then). */
export async function engineAnswers(docker: Dockerode): Promise<boolean> {
  try {
    await docker.ping();
    return true;
  } catch {
    return false;
  }
}
