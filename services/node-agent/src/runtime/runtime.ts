import type { ContainerStatus, EphemeralContainer, Pod } from "@choreo/kit/gen/choreo/core/v1/core";

/**
 * What a runtime knows about one pod: its IP, when its sandbox started, and
 * its containers in the Kubernetes shape (state running/terminated/waiting,
 * ready, started, restartCount). The agent derives phase and conditions.
 */
export interface PodRuntimeStatus {
  uid: string;
  podIp: string;
  /** RFC 3339; when the pod's sandbox came up. */
  startedAt: string;
  containerStatuses: ContainerStatus[];
  /** The pod's init containers in spec order (none: the pod has none); one not started yet waits with reason PodInitializing. */
  initContainerStatuses?: ContainerStatus[] | undefined;
  /** The ephemeral containers started in the pod (startEphemeralContainer), in the order they were started. */
  ephemeralContainerStatuses?: ContainerStatus[] | undefined;
}

/** The pod `runtime` holds under the work-queue key `namespace/name` (the first `listPods` names), if any. */
export function heldPod(runtime: Pick<Runtime, "listPods" | "findPod">, key: string): RuntimePod | undefined {
  const i = key.indexOf("/");
  const namespace = i < 0 ? "" : key.slice(0, i);
  return findHeld(runtime, namespace, i < 0 ? key : key.slice(i + 1));
}

/** The pod `runtime` holds as `namespace/name` (the first `listPods` names), if any: `findPod`, else through `listPods`. */
export function findHeld(runtime: Pick<Runtime, "listPods" | "findPod">, namespace: string, name: string): RuntimePod | undefined {
  if (runtime.findPod) return runtime.findPod(namespace, name);
  return runtime.listPods().find((p) => p.namespace === namespace && p.name === name);
}

/** A pod the runtime holds, with enough identity to find its api object. */
export interface RuntimePod {
  uid: string;
  namespace: string;
  name: string;
}

/** Called when a pod's runtime state changes on its own (a container exits, readiness flips). */
export type RuntimeListener = (pod: RuntimePod) => void;

/** What `GET pods/NAME/log` asks of a container's log (Kubernetes' PodLogOptions). */
export interface LogOptions {
  container: string;
  follow: boolean;
  /** Only the last N lines. */
  tailLines?: number;
  /** Only lines written in the last N seconds. */
  sinceSeconds?: number;
  /** Each line prefixed with its RFC 3339 (nano) timestamp and a space. */
  timestamps: boolean;
  /** The log of the container's previous run (its last restart). */
  previous: boolean;
}

/** What an exec (probe) returned: exit code and (bounded) combined output. */
export interface ExecResult {
  exitCode: number;
  output: string;
}

/** What `execStream`/`attach` open (Kubernetes' pods/exec and pods/attach). */
export interface StreamOptions {
  /** The caller sends stdin (else the process gets none: EOF at once for exec). */
  stdin: boolean;
  /** A terminal: stdout carries stdout and stderr, `resize` applies. */
  tty: boolean;
}

/** A running exec or attach: its streams, terminal size and end. */
export interface StreamSession {
  /** The process' stdin (present when `stdin` was asked); end() closes it. */
  stdin: NodeJS.WritableStream | undefined;
  stdout: NodeJS.ReadableStream;
  /** Absent with a tty (everything comes on stdout). */
  stderr: NodeJS.ReadableStream | undefined;
  /** Sets the terminal size (tty only; ignored otherwise). */
  resize(width: number, height: number): void;
  /** The exit code (exec), or 0 when an attach ends without the container exiting. Resolves after stdout and stderr ended. */
  exit: Promise<number>;
  /** Ends the session early (the caller left): kills an exec's process, detaches an attach. */
  kill(): void;
}

/**
 * Thrown by `logs`/`exec` when what was asked does not exist (no such
 * container, no previous run): the api answers 400 BadRequest with the message.
 */
export class RuntimeRequestError extends Error {
  override readonly name = "RuntimeRequestError";

  /** The pod is not (or no longer) on this node. */
  static noPod(uid: string, node: string): RuntimeRequestError {
    return new RuntimeRequestError(`pod with uid ${uid} is not running on node ${node}`);
  }

  /** The pod has no container of that name (the kubelet's wording). */
  static noContainer(container: string, pod: string): RuntimeRequestError {
    return new RuntimeRequestError(`container ${container} is not valid for pod ${pod}`);
  }

  /** `previous` logs of a container that never restarted (the kubelet's wording). */
  static noPrevious(container: string, pod: string): RuntimeRequestError {
    return new RuntimeRequestError(`previous terminated container "${container}" in pod "${pod}" not found`);
  }
}

/**
 * The seam between the node agent and what runs containers (hollow, docker,
 * process). Calls for one pod never overlap: the agent reconciles a pod key
 * on one worker at a time.
 *
 * Image problems are statuses, not exceptions: a container whose image is
 * missing shows `waiting: ErrImagePull` then `ImagePullBackOff` (the runtime
 * retries with back-off on its own and calls the listeners when it
 * changes). `startPod` throws only when the pod cannot be set up at all
 * (sandbox, network), and the agent retries it with back-off.
 */
export interface Runtime {
  readonly name: string;
  /** Whether the agent runs liveness/readiness/startup probes against this runtime's pods (not hollow ones). */
  readonly probes: boolean;
  /**
   * Prepares the runtime before any pod call: images, the node's network,
   * and the pods it already holds from before an agent restart (found by
   * their labels or state files, so that `adoptPod` can take them over).
   */
  init(): Promise<void>;
  /**
   * Starts the pod's sandbox and containers; idempotent for a uid it already
   * runs. A pod with init containers gets only its sandbox: every container
   * waits (PodInitializing) until the agent starts it with `startContainer`,
   * the init containers one at a time, then the app containers.
   */
  startPod(pod: Pod): Promise<PodRuntimeStatus>;
  /** Starts a container of a held pod that has not run yet (waiting PodInitializing); a no-op for one that ran or is starting. */
  startContainer(uid: string, container: string): Promise<void>;
  /**
   * Starts an ephemeral container (kubectl debug) in the running pod: in its
   * network, and with `targetContainerName` in that container's PID
   * namespace. Never restarted; a no-op for a name the pod already has, or
   * for a pod the runtime does not hold.
   */
  startEphemeralContainer(pod: Pod, container: EphemeralContainer): Promise<void>;
  /** Stops the pod, giving its containers up to `gracePeriodSeconds` (SIGTERM, then SIGKILL); then frees everything it held. Unknown uids are fine. */
  stopPod(pod: RuntimePod, gracePeriodSeconds: number): Promise<void>;
  /** Starts a terminated container again (restartCount + 1; the run before becomes lastState and the `previous` log). */
  restartContainer(uid: string, container: string): Promise<void>;
  /**
   * Stops a running container (a failed liveness probe): SIGTERM, SIGKILL
   * after the grace period. It becomes terminated and the restart policy
   * decides what next, as for any exit.
   */
  killContainer(uid: string, container: string, gracePeriodSeconds: number): Promise<void>;
  /**
   * Takes over a pod the api reports as running, after an agent restart:
   * its status if the runtime still holds it (found in `init`), `undefined`
   * if it must be started again.
   */
  adoptPod(pod: Pod): Promise<PodRuntimeStatus | undefined>;
  podStatus(uid: string): PodRuntimeStatus | undefined;
  listPods(): RuntimePod[];
  /**
   * The first pod `listPods` would name `namespace/name`, without listing them all (optional: {@link heldPod}
   * falls back to `listPods`). The agent asks at every reconcile, and a hollow node holds up to hundreds.
   */
  findPod?(namespace: string, name: string): RuntimePod | undefined;
  /** Runs a command in a running container (exec probes); resolves with a non-zero exit code on timeout (the process is killed). */
  exec(uid: string, container: string, command: readonly string[], timeoutMs: number): Promise<ExecResult>;
  /** Runs a command in a running container with its streams connected (pods/exec); throws RuntimeRequestError when it cannot. */
  execStream?(uid: string, container: string, command: readonly string[], opts: StreamOptions): Promise<StreamSession>;
  /** Connects to a running container's main process (pods/attach); throws RuntimeRequestError when it cannot. */
  attach?(uid: string, container: string, opts: StreamOptions): Promise<StreamSession>;
  /** A container's log as raw chunks of lines; a followed log ends when `signal` aborts or the container stops for good. */
  logs(uid: string, opts: LogOptions, signal: AbortSignal): AsyncIterable<Uint8Array>;
  /** Subscribes to changes the runtime makes on its own (the agent enqueues the pod). */
  onChange(listener: RuntimeListener): void;
  /** Releases timers and connections; leaves the pods running (a restarted agent adopts them). */
  close(): Promise<void>;
}
