import type { ContainerStatus, Pod } from "@choreo/kit/gen/choreo/core/v1/core";

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
}

/** A pod the runtime holds, with enough identity to find its api object. */
export interface RuntimePod {
  uid: string;
  namespace: string;
  name: string;
}

/** Called when a pod's runtime state changes on its own (a container exits, readiness flips). */
export type RuntimeListener = (pod: RuntimePod) => void;

/**
 * The seam between the node agent and what runs containers (hollow, docker,
 * process). Calls for one pod never overlap: the agent reconciles a pod key
 * on one worker at a time.
 */
export interface Runtime {
  readonly name: string;
  /** Starts the pod's sandbox and containers; idempotent for a uid it already runs. */
  startPod(pod: Pod): Promise<PodRuntimeStatus>;
  /** Stops the pod, giving its containers up to `gracePeriodSeconds`; then forgets it. Unknown uids are fine. */
  stopPod(pod: RuntimePod, gracePeriodSeconds: number): Promise<void>;
  /** Starts a terminated container again (restartCount + 1). */
  restartContainer(uid: string, container: string): Promise<void>;
  /**
   * Takes over a pod the api reports as running, after an agent restart:
   * its status if the runtime can account for it, `undefined` if it must be
   * started again.
   */
  adoptPod(pod: Pod): PodRuntimeStatus | undefined;
  podStatus(uid: string): PodRuntimeStatus | undefined;
  listPods(): RuntimePod[];
  /** Subscribes to changes the runtime makes on its own (the agent enqueues the pod). */
  onChange(listener: RuntimeListener): void;
  /** Releases timers and connections. */
  close(): Promise<void>;
}
