import type Dockerode from "dockerode";
import { statusCode } from "./engine.js";

/** `name` with `:latest` when it names no tag or digest (a tagless pull would fetch every tag). */
export function withTag(image: string): string {
  const last = image.split("/").pop() ?? image;
  return last.includes(":") || image.includes("@") ? image : `${image}:latest`;
}

/** Whether the engine has the image. */
export async function imagePresent(docker: Dockerode, image: string): Promise<boolean> {
  try {
    await docker.getImage(withTag(image)).inspect();
    return true;
  } catch (err) {
    if (statusCode(err) === 404) return false;
    throw err;
  }
}

/**
 * Pulls the image; rejects with docker's message when the pull fails,
 * including failures reported inside the progress stream.
 */
export async function pullImage(docker: Dockerode, image: string): Promise<void> {
  const stream = (await docker.pull(withTag(image))) as NodeJS.ReadableStream;
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(stream, (err: Error | null, output: Array<{ error?: string }> | undefined) => {
      const failed = err ?? (output ?? []).find((o) => o.error);
      if (!failed) resolve();
      else reject(failed instanceof Error ? failed : new Error(failed.error));
    });
  });
}

/** What to do for a container's image under its imagePullPolicy (the api defaults it; empty means IfNotPresent). */
export type ImageAction = "use" | "pull" | "never";

/** Never → use or `never` (ErrImageNeverPull); IfNotPresent → use or pull; Always → pull. */
export function imageAction(policy: string, present: boolean): ImageAction {
  if (policy === "Always") return "pull";
  if (present) return "use";
  return policy === "Never" ? "never" : "pull";
}

/** The image's user (`Config.User`: `""` is root), from the engine's image inspect. */
export async function imageConfigUser(docker: Dockerode, image: string): Promise<string> {
  const info = await docker.getImage(withTag(image)).inspect();
  return info.Config?.User ?? "";
}
