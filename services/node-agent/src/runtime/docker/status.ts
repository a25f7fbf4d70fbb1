import type Dockerode from "dockerode";
import type { ContainerState, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus } from "@choreo/kit/gen/choreo/core/v1/core";

/** What the runtime keeps of one docker container instance (one run of a pod's container). */
export interface Instance {
  id: string;
  restartCount: number;
  /** `sha256:…` of the image it runs. */
  imageId: string;
  /** docker's State.Status: created, running, paused, restarting, removing, exited, dead. */
  status: string;
  exitCode: number;
  oomKilled: boolean;
  /** docker's State.Error (why a start failed). */
  error: string;
  /** RFC 3339, "" when never. */
  startedAt: string;
  finishedAt: string;
  /** Removed from the engine behind our back (its last known state stays). */
  removed: boolean;
}

/** Everything {@link containerStatus} needs about one container of the pod spec. */
export interface ContainerView {
  name: string;
  image: string;
  restartCount: number;
  current?: Instance | undefined;
  previous?: Instance | undefined;
  /** Set while no instance of `restartCount` exists yet (creating, image problems). */
  waiting?: ContainerStateWaiting | undefined;
}

/**
 * docker's times (`2026-11-24T22:35:34.123456789Z`, `0001-01-01T00:00:00Z`
 * for never) as the api's RFC 3339 seconds, so that a status read twice
 * compares equal byte for byte.
 */
export function dockerTime(t: string | undefined): string {
  if (!t || t.startsWith("0001-")) return "";
  return t.replace(/\.\d+Z$/, "Z");
}

/** The instance as inspect shows it now. */
export function instanceFromInspect(info: Dockerode.ContainerInspectInfo, restartCount: number): Instance {
  const s = info.State;
  return {
    id: info.Id,
    restartCount,
    imageId: info.Image,
    status: s.Status,
    exitCode: s.ExitCode,
    oomKilled: s.OOMKilled,
    error: s.Error,
    startedAt: dockerTime(s.StartedAt),
    finishedAt: dockerTime(s.FinishedAt),
    removed: false,
  };
}

/** Whether the instance's processes run (paused ones count: they still hold their resources). */
export function isRunning(i: Instance): boolean {
  return !i.removed && (i.status === "running" || i.status === "paused" || i.status === "restarting");
}

/** How far an instance got: created 0, running 1, exited 2, removed 3. */
function progress(i: Instance): number {
  if (i.removed) return 3;
  if (isRunning(i)) return 1;
  return i.status === "created" ? 0 : 2;
}

/**
 * The newer of two readings of one instance. Inspects may answer out of
 * order; an instance only moves forward (created → running → exited →
 * removed), so an older answer never undoes a newer one.
 */
export function later(known: Instance | undefined, read: Instance): Instance {
  if (!known || known.id !== read.id) return read;
  return progress(read) >= progress(known) ? read : known;
}

/** `docker://<id>`, the Kubernetes container id. */
export function containerId(i: Instance): string {
  return `docker://${i.id}`;
}

/**
 * The terminated state of an instance that ran and stopped (reason
 * OOMKilled, Completed or Error, like the kubelet), or of one docker could
 * not start (ContainerCannotRun); undefined while it runs or was never started.
 */
export function terminatedOf(i: Instance): ContainerStateTerminated | undefined {
  const base = { signal: 0, startedAt: i.startedAt, finishedAt: i.finishedAt, containerId: containerId(i) };
  if (isRunning(i)) return undefined;
  if (i.status === "created") {
    if (!i.error && !i.removed) return undefined;
    return { ...base, exitCode: i.exitCode || 128, reason: "ContainerCannotRun", message: i.error || "removed before it started" };
  }
  const reason = i.oomKilled ? "OOMKilled" : i.exitCode === 0 ? "Completed" : "Error";
  return { ...base, exitCode: i.exitCode, reason, message: i.error };
}

/** The Kubernetes state of the current instance (or of the waiting reason when there is none yet). */
export function stateOf(v: ContainerView): ContainerState {
  if (v.waiting || !v.current) return { waiting: v.waiting ?? { reason: "ContainerCreating", message: "" } };
  if (isRunning(v.current)) return { running: { startedAt: v.current.startedAt } };
  const terminated = terminatedOf(v.current);
  return terminated ? { terminated } : { waiting: { reason: "ContainerCreating", message: "" } };
}

/**
 * A container's status in the Kubernetes shape. lastState is the previous
 * instance (the run before the last restart). ready = started = running:
 * the agent's prober refines readiness.
 */
export function containerStatus(v: ContainerView): ContainerStatus {
  const state = stateOf(v);
  const last = v.previous ? terminatedOf(v.previous) : undefined;
  const shown = v.waiting ? undefined : v.current;
  const running = state.running !== undefined;
  return {
    name: v.name,
    state,
    lastState: last ? { terminated: last } : undefined,
    ready: running,
    restartCount: v.restartCount,
    image: v.image,
    imageId: shown ? `docker://${shown.imageId}` : "",
    allocatedResources: {},
    volumeMounts: [],
    allocatedResourcesStatus: [],
    containerId: shown ? containerId(shown) : "",
    started: running,
  };
}
