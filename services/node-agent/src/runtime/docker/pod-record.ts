import type { Container, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { PodRuntimeStatus, RuntimePod } from "../runtime.js";
import { containerStatus, type ContainerView, type Instance } from "./status.js";

/** What the runtime holds for one container of a pod: its instances and why it waits. */
export interface ContainerRecord extends ContainerView {
  /** undefined for a pod found at init and not adopted yet (nothing can be created for it). */
  spec: Container | undefined;
  /** The next retry of an image pull or create. */
  timer: NodeJS.Timeout | undefined;
  backoffMs: number;
  /** An ephemeral container (kubectl debug), with the container whose PID namespace it joins ("" for none). */
  ephemeral?: { target: string } | undefined;
}

/** What the runtime holds for one pod: sandbox, IP, directory, containers. */
export interface PodRecord {
  ref: RuntimePod;
  /** The api object it was started or adopted with; undefined until adopted after an agent restart. */
  pod: Pod | undefined;
  sandboxId: string;
  podIp: string;
  hostNetwork: boolean;
  /** When the sandbox started (RFC 3339). */
  startedAt: string;
  podDir: string;
  containers: Map<string, ContainerRecord>;
  /** stopPod began: no more creates, no more notifications. */
  stopping: boolean;
  /** Creates in progress, awaited by stopPod so that none outlives the pod. */
  inflight: Set<Promise<void>>;
  /** The status last handed out, to notify only on change. */
  lastSeen: string;
}

/** A container record with no instance yet. */
export function newContainerRecord(name: string, image: string, spec: Container | undefined): ContainerRecord {
  return {
    name,
    image,
    restartCount: 0,
    current: undefined,
    previous: undefined,
    waiting: { reason: "ContainerCreating", message: "" },
    spec,
    timer: undefined,
    backoffMs: 0,
  };
}

/** The pod's runtime status; containers (and init containers) in spec order when the spec is known. */
export function podStatusOf(p: PodRecord): PodRuntimeStatus {
  const order = p.pod?.spec?.containers.map((c) => c.name) ?? [...p.containers.values()].filter((c) => !c.ephemeral).map((c) => c.name);
  const statuses = (names: readonly string[]) =>
    names.flatMap((name) => {
      const c = p.containers.get(name);
      return c ? [containerStatus(c)] : [];
    });
  const inits = p.pod?.spec?.initContainers.map((c) => c.name) ?? [];
  const status: PodRuntimeStatus = { uid: p.ref.uid, podIp: p.podIp, startedAt: p.startedAt, containerStatuses: statuses(order) };
  if (inits.length > 0) status.initContainerStatuses = statuses(inits);
  const ephemeral = [...p.containers.values()].filter((c) => c.ephemeral);
  if (ephemeral.length > 0) status.ephemeralContainerStatuses = ephemeral.map(containerStatus);
  return status;
}

/** The container record and slot an instance id belongs to. */
export function findInstance(p: PodRecord, id: string): { c: ContainerRecord; slot: "current" | "previous" } | undefined {
  for (const c of p.containers.values()) {
    if (c.current?.id === id) return { c, slot: "current" };
    if (c.previous?.id === id) return { c, slot: "previous" };
  }
  return undefined;
}

/** Every instance the pod's records point at. */
export function instancesOf(p: PodRecord): Instance[] {
  return [...p.containers.values()].flatMap((c) => [c.current, c.previous].filter((i): i is Instance => i !== undefined));
}
