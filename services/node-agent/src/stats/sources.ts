import { bytes, parseQuantity } from "@choreo/kit/apimachinery";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Runtime, RuntimePod } from "../runtime/runtime.js";
import type { CgroupReader } from "./cgroup-reader.js";

/** A running container whose usage can be read: its pod, name and cgroup (relative to the hierarchy root). */
export interface ContainerTarget {
  pod: RuntimePod;
  container: string;
  /** The run's container id: a restart is a new counter. */
  containerId: string;
  cgroup: string;
}

/** The running containers of a runtime's pods, with their ids. */
export function runningContainers(runtime: Pick<Runtime, "listPods" | "podStatus">): { pod: RuntimePod; container: string; containerId: string }[] {
  const out: { pod: RuntimePod; container: string; containerId: string }[] = [];
  for (const pod of runtime.listPods()) {
    for (const cs of runtime.podStatus(pod.uid)?.containerStatuses ?? []) {
      if (cs.state?.running && cs.containerId) out.push({ pod, container: cs.name, containerId: cs.containerId });
    }
  }
  return out;
}

/**
 * Where a container's cgroup is, by runtime: docker places `docker://<id>`
 * at `docker/<id>` (cgroupfs driver) or `system.slice/docker-<id>.scope`
 * (systemd driver); the process runtime at `choreo/<node>/<uid>/<container>`
 * (runtime/process/cgroups.ts). Undefined when none exists.
 */
export function cgroupOf(
  runtime: string,
  node: string,
  c: { pod: RuntimePod; container: string; containerId: string },
  cgroups: Pick<CgroupReader, "exists">,
): string | undefined {
  if (runtime === "process") return `choreo/${node}/${c.pod.uid}/${c.container}`;
  if (runtime !== "docker") return undefined;
  const id = c.containerId.replace(/^docker:\/\//, "");
  return [`docker/${id}`, `system.slice/docker-${id}.scope`].find((rel) => cgroups.exists(rel));
}

/** CPU (nanocores) and memory (bytes) a container requests; what a hollow container "uses". */
export function requestedUsage(pod: Pod | undefined, container: string): { cpuNanocores: bigint; memoryBytes: bigint } {
  const c = pod?.spec?.containers.find((x) => x.name === container);
  const req = c?.resources?.requests ?? {};
  const parse = (f: (s: string) => bigint, s: string | undefined): bigint => {
    if (!s) return 0n;
    try {
      return f(s);
    } catch {
      return 0n;
    }
  };
  return { cpuNanocores: parse((q) => parseQuantity(q).nano, req["cpu"]), memoryBytes: parse(bytes, req["memory"]) };
}
