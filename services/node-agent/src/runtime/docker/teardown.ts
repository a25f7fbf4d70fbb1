import type Dockerode from "dockerode";
import type { PodNetwork } from "../../net/types.js";
import { removeQuietly, stopQuietly } from "./engine.js";
import { nodeFilter, podOfLabels, SANDBOX } from "./names.js";
import type { PodRecord } from "./pod-record.js";
import { podDirOf, removePodDir } from "./sandbox.js";

/** What {@link removePod} needs from the runtime. */
export interface TeardownDeps {
  docker: Dockerode;
  network: PodNetwork;
  node: string;
  stateDir: string;
}

/**
 * Takes a pod down, whether the runtime holds it or only its containers
 * remain (found by label): app containers stopped in parallel with the
 * grace period (SIGTERM, SIGKILL after it), then the sandbox; the pod's
 * veth and IP released; every container removed; tmpfs volumes unmounted
 * and the pod directory removed.
 */
export async function removePod(d: TeardownDeps, uid: string, held: PodRecord | undefined, graceSeconds: number): Promise<void> {
  const list = await d.docker.listContainers({ all: true, filters: JSON.stringify(nodeFilter(d.node, uid)) });
  const sandboxes = list.filter((s) => podOfLabels(s.Labels)?.container === SANDBOX);
  const apps = list.filter((s) => !sandboxes.includes(s));
  await Promise.all(apps.filter((s) => s.State === "running").map((s) => stopQuietly(d.docker, s.Id, graceSeconds)));
  // The sandbox only sleeps: nothing to wait for.
  await Promise.all(sandboxes.map((s) => stopQuietly(d.docker, s.Id, 0)));
  const hostNetwork = held?.hostNetwork ?? sandboxes.some((s) => s.HostConfig?.NetworkMode === "host");
  const podIp = held?.podIp || list.map((s) => podOfLabels(s.Labels)?.podIp ?? "").find((ip) => ip) || "";
  if (!hostNetwork && (held || sandboxes.length > 0)) await d.network.detach(uid, podIp);
  await Promise.all(list.map((s) => removeQuietly(d.docker, s.Id)));
  await removePodDir(podDirOf(d.stateDir, uid));
}
