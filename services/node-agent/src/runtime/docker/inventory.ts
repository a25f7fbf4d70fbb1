import { readFile } from "node:fs/promises";
import path from "node:path";
import type Dockerode from "dockerode";
import { nodeFilter, podOfLabels, SANDBOX } from "./names.js";
import { newContainerRecord, type PodRecord } from "./pod-record.js";
import { podDirOf } from "./sandbox.js";
import { dockerTime, instanceFromInspect } from "./status.js";

/** A pod whose sandbox is gone or stopped: its containers and directory are to be removed. */
export interface DeadPod {
  uid: string;
  podIp: string;
  hostNetwork: boolean;
  containerIds: string[];
}

/** What a node's containers say after an agent restart. */
export interface Inventory {
  /** Pods with a running sandbox, rebuilt with their current and previous instances. */
  held: PodRecord[];
  dead: DeadPod[];
  /** Instances older than the previous one of their container (kept by nobody). */
  stale: string[];
}

type Summary = Dockerode.ContainerInfo;

/**
 * Reads the node's containers (by the node label) and rebuilds what the
 * runtime held before it restarted: for each pod with a running sandbox its
 * IP (sandbox or app container label, else the `ip` file), sandbox start
 * time, and per container the newest instance (current) and the one before
 * (previous). Specs are unknown until the agent adopts the pod.
 */
export async function scanNode(docker: Dockerode, node: string, stateDir: string): Promise<Inventory> {
  const list = await docker.listContainers({ all: true, filters: JSON.stringify(nodeFilter(node)) });
  const byPod = new Map<string, Summary[]>();
  for (const s of list) {
    const uid = podOfLabels(s.Labels)?.uid;
    if (uid) byPod.set(uid, [...(byPod.get(uid) ?? []), s]);
  }
  const inv: Inventory = { held: [], dead: [], stale: [] };
  for (const [uid, summaries] of byPod) {
    const sandbox = summaries.find((s) => podOfLabels(s.Labels)?.container === SANDBOX);
    const podDir = podDirOf(stateDir, uid);
    const podIp =
      summaries.map((s) => podOfLabels(s.Labels)?.podIp ?? "").find((ip) => ip !== "") ??
      (await readFile(path.join(podDir, "ip"), "utf8").catch(() => "")).trim();
    const hostNetwork = sandbox?.HostConfig?.NetworkMode === "host";
    if (!sandbox || sandbox.State !== "running") {
      inv.dead.push({ uid, podIp, hostNetwork, containerIds: summaries.map((s) => s.Id) });
      continue;
    }
    const owner = podOfLabels(sandbox.Labels)!;
    const sandboxInfo = await docker.getContainer(sandbox.Id).inspect();
    const record: PodRecord = {
      ref: { uid, namespace: owner.namespace, name: owner.name },
      pod: undefined,
      sandboxId: sandbox.Id,
      podIp,
      hostNetwork,
      startedAt: dockerTime(sandboxInfo.State.StartedAt),
      podDir,
      containers: new Map(),
      stopping: false,
      inflight: new Set(),
      lastSeen: "",
    };
    const apps = summaries.filter((s) => s !== sandbox);
    for (const name of new Set(apps.map((s) => podOfLabels(s.Labels)!.container))) {
      const runs = apps
        .filter((s) => podOfLabels(s.Labels)!.container === name)
        .sort((a, b) => podOfLabels(b.Labels)!.restartCount - podOfLabels(a.Labels)!.restartCount);
      const [current, previous, ...older] = runs;
      inv.stale.push(...older.map((s) => s.Id));
      const c = newContainerRecord(name, current!.Image, undefined);
      c.waiting = undefined;
      c.restartCount = podOfLabels(current!.Labels)!.restartCount;
      const info = await docker.getContainer(current!.Id).inspect();
      c.image = info.Config.Image;
      c.current = instanceFromInspect(info, c.restartCount);
      if (previous) c.previous = instanceFromInspect(await docker.getContainer(previous.Id).inspect(), podOfLabels(previous.Labels)!.restartCount);
      record.containers.set(name, c);
    }
    inv.held.push(record);
  }
  return inv;
}
