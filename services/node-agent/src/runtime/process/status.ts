import type { FSWatcher } from "node:fs";
import type { ContainerStateTerminated, ContainerStateWaiting, ContainerStatus } from "@choreo/kit/gen/choreo/core/v1/core";
import type { ContainerRecord, RunExit } from "./state.js";

/** What the runtime holds for one container: its record, and how its current run ended (if it did). */
export interface HeldContainer {
  rec: ContainerRecord;
  exit: RunExit | undefined;
  watcher: FSWatcher | undefined;
  /**
   * Set while run `restartCount` could not be started (a subPath or
   * hostPath the safe walk refused: CreateContainerConfigError); the
   * runtime retries it with back-off until it starts.
   */
  waiting?: { state: ContainerStateWaiting; backoffMs: number; retryAt: number; retrying: boolean } | undefined;
  /** Set while run `restartCount` is being started (its volumes bound): it has no end to read yet. */
  starting?: boolean | undefined;
}

/** The end of a run whose shim died without writing one (kubelet's wording for a container it lost). */
export function unknownExit(): RunExit {
  return { exitCode: 137, reason: "ContainerStatusUnknown", finishedAt: new Date().toISOString().replace(/\.\d{3}Z$/, "Z") };
}

/** The id of run `n` of a container. */
export function containerId(uid: string, name: string, n: number): string {
  return `process://${uid}/${name}/${n}`;
}

/** A run's end in the Kubernetes shape. */
export function terminated(uid: string, c: HeldContainer, exit: RunExit): ContainerStateTerminated {
  return {
    exitCode: exit.exitCode,
    signal: exit.exitCode > 128 ? exit.exitCode - 128 : 0,
    reason: exit.reason,
    message: exit.reason === "ContainerStatusUnknown" ? "The container's shim ended without recording its exit" : "",
    startedAt: c.rec.startedAt,
    finishedAt: exit.finishedAt,
    containerId: containerId(uid, c.rec.name, c.rec.restartCount),
  };
}

/** The container's status: running (ready: probes decide later), terminated, or waiting (a run it could not start); lastState from the run before. */
export function containerStatus(uid: string, c: HeldContainer): ContainerStatus {
  const r = c.rec;
  if (c.waiting) {
    return {
      name: r.name,
      state: { waiting: c.waiting.state },
      lastState: r.last ? { terminated: r.last } : undefined,
      ready: false,
      restartCount: r.restartCount,
      image: r.image,
      imageId: "",
      allocatedResources: {},
      volumeMounts: [],
      allocatedResourcesStatus: [],
      containerId: "",
      started: false,
    };
  }
  const state = c.exit ? { terminated: terminated(uid, c, c.exit) } : { running: { startedAt: r.startedAt } };
  return {
    name: r.name,
    state,
    lastState: r.last ? { terminated: r.last } : undefined,
    ready: !c.exit,
    restartCount: r.restartCount,
    image: r.image,
    imageId: r.root === "image" ? `process://${r.image}` : "process://host",
    allocatedResources: {},
    volumeMounts: [],
    allocatedResourcesStatus: [],
    containerId: containerId(uid, r.name, r.restartCount),
    started: !c.exit,
  };
}
