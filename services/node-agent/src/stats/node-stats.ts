import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Runtime } from "../runtime/runtime.js";
import { machineReading, type CgroupReader, type Reading } from "./cgroup-reader.js";
import { cgroupOf, requestedUsage, runningContainers } from "./sources.js";
import { SampleWindow, type WindowUsage } from "./window.js";

/** One container's usage (what a node's stats reply carries per container). */
export interface ContainerUsage {
  namespace: string;
  pod: string;
  uid: string;
  container: string;
  usage: WindowUsage;
}

/** What a node can say about its usage now. */
export interface NodeUsage {
  /** The node's own usage; undefined until it has two readings. */
  node: WindowUsage | undefined;
  containers: ContainerUsage[];
}

/** A source of a node's usage: real nodes read cgroups, hollow nodes report requests. */
export interface UsageSource {
  /** Takes a reading of everything (called every few seconds, and once more on each request). */
  sample(nowMs?: number): void;
  /** Usage over the window kept, ending at the last reading. */
  usage(): NodeUsage;
}

/** Options of {@link CgroupUsage}. */
export interface CgroupUsageOptions {
  node: string;
  /** "docker" or "process": where its containers' cgroups are. */
  runtimeName: string;
  runtime: Pick<Runtime, "listPods" | "podStatus">;
  cgroups: Pick<CgroupReader, "exists" | "read">;
  /** The machine's reading (default /proc/stat and /proc/meminfo). */
  machine?: () => Reading | undefined;
  /** How much history a rate spans (default 15 s, metrics-server's resolution). */
  windowMs?: number;
}

/**
 * A real node's usage: a {@link SampleWindow} per running container (by
 * container id: a restart starts a new one) and one for the machine, fed by
 * `sample`. Containers that stopped are forgotten at the next reading.
 */
export class CgroupUsage implements UsageSource {
  private readonly containers = new Map<string, { c: Omit<ContainerUsage, "usage">; w: SampleWindow }>();
  private readonly machine: SampleWindow;
  private readonly spanMs: number;

  constructor(private readonly o: CgroupUsageOptions) {
    this.spanMs = o.windowMs ?? 15_000;
    this.machine = new SampleWindow(this.spanMs);
  }

  sample(nowMs = Date.now()): void {
    const m = (this.o.machine ?? machineReading)();
    if (m) this.machine.add({ atMs: nowMs, ...m });
    const seen = new Set<string>();
    for (const c of runningContainers(this.o.runtime)) {
      const rel = cgroupOf(this.o.runtimeName, this.o.node, c, this.o.cgroups);
      const r = rel === undefined ? undefined : this.o.cgroups.read(rel);
      if (!r) continue;
      seen.add(c.containerId);
      let entry = this.containers.get(c.containerId);
      if (!entry) {
        entry = { c: { namespace: c.pod.namespace, pod: c.pod.name, uid: c.pod.uid, container: c.container }, w: new SampleWindow(this.spanMs) };
        this.containers.set(c.containerId, entry);
      }
      entry.w.add({ atMs: nowMs, ...r });
    }
    for (const id of this.containers.keys()) if (!seen.has(id)) this.containers.delete(id);
  }

  usage(): NodeUsage {
    const containers: ContainerUsage[] = [];
    for (const { c, w } of this.containers.values()) {
      const usage = w.usage();
      if (usage) containers.push({ ...c, usage });
    }
    return { node: this.machine.usage(), containers };
  }
}

/** Options of {@link RequestedUsage}. */
export interface RequestedUsageOptions {
  runtime: Pick<Runtime, "listPods" | "podStatus">;
  /** The agent's pod cache by `namespace/name` (for the requests). */
  pods: { get(key: string): Pod | undefined };
  /** The window reported (default 15 s). */
  windowMs?: number;
}

/**
 * A hollow node's usage: each running container uses what it requests,
 * and the node the sum of its containers, so that thousands of hollow
 * nodes look plausible to `kubectl top` and autoscalers. Nothing is read.
 */
export class RequestedUsage implements UsageSource {
  private lastMs = Date.now();

  constructor(private readonly o: RequestedUsageOptions) {}

  sample(nowMs = Date.now()): void {
    this.lastMs = nowMs;
  }

  usage(): NodeUsage {
    const windowMs = this.o.windowMs ?? 15_000;
    const containers: ContainerUsage[] = [];
    let cpu = 0n;
    let mem = 0n;
    for (const c of runningContainers(this.o.runtime)) {
      const spec = this.o.pods.get(`${c.pod.namespace}/${c.pod.name}`);
      if (spec?.metadata?.uid !== c.pod.uid) continue;
      const r = requestedUsage(spec, c.container);
      cpu += r.cpuNanocores;
      mem += r.memoryBytes;
      containers.push({
        namespace: c.pod.namespace,
        pod: c.pod.name,
        uid: c.pod.uid,
        container: c.container,
        usage: { ...r, endMs: this.lastMs, windowMs },
      });
    }
    return { node: { cpuNanocores: cpu, memoryBytes: mem, endMs: this.lastMs, windowMs }, containers };
  }
}
