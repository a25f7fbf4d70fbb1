import fs from "node:fs";
import path from "node:path";
import { signal } from "./proc.js";

/** A container's limits as the kernel takes them. */
export interface CgroupLimits {
  /** limits.memory, in bytes. */
  memoryBytes?: bigint | undefined;
  /** limits.cpu, in millicores (→ a CFS quota per 100 ms period). */
  cpuMilli?: bigint | undefined;
}

const CFS_PERIOD_US = 100_000;

/**
 * The cgroups of process-runtime containers:
 * `choreo/<node>/<pod uid>/<container>` under the memory and cpu
 * hierarchies (cgroup v1) or the unified hierarchy (v2, when the root is
 * cgroup2). Written with plain file writes: no process is spawned.
 */
export class Cgroups {
  /** True when `root` is a cgroup2 (unified) mount. */
  readonly v2: boolean;

  /** v1 hierarchies a container joins: memory, cpu, and cpuacct (CPU usage for metrics) when it is mounted on its own. */
  private readonly v1Trees: string[];

  constructor(private readonly root = "/sys/fs/cgroup") {
    this.v2 = fs.existsSync(path.join(root, "cgroup.controllers"));
    this.v1Trees = ["memory", "cpu"];
    if (!this.v2 && separateTree(root, "cpuacct", "cpu")) this.v1Trees.push("cpuacct");
  }

  /** Where the pod's cgroups hang, one per hierarchy. */
  podDirs(node: string, uid: string): string[] {
    const rel = path.join("choreo", node, uid);
    return this.v2 ? [path.join(this.root, rel)] : this.v1Trees.map((c) => path.join(this.root, c, rel));
  }

  /** The container's cgroup directories (memory first under v1). */
  containerDirs(node: string, uid: string, container: string): string[] {
    return this.podDirs(node, uid).map((d) => path.join(d, container));
  }

  /** The file whose `oom_kill N` line counts OOM kills in the container's cgroup. */
  oomFile(dirs: readonly string[]): string {
    return path.join(dirs[0]!, this.v2 ? "memory.events" : "memory.oom_control");
  }

  /**
   * Creates the container's cgroups afresh for a run (an earlier run's
   * empty cgroup is removed first, so OOM counters start at zero) and
   * writes its limits.
   */
  create(node: string, uid: string, container: string, limits: CgroupLimits): string[] {
    const dirs = this.containerDirs(node, uid, container);
    for (const d of dirs) {
      this.killAll(d);
      tryRmdir(d);
      fs.mkdirSync(d, { recursive: true });
    }
    if (this.v2) {
      this.enableControllers(path.dirname(dirs[0]!));
      const d = dirs[0]!;
      if (limits.memoryBytes !== undefined) {
        fs.writeFileSync(path.join(d, "memory.max"), String(limits.memoryBytes));
        tryWrite(path.join(d, "memory.swap.max"), "0");
      }
      if (limits.cpuMilli !== undefined) fs.writeFileSync(path.join(d, "cpu.max"), `${quotaUs(limits.cpuMilli)} ${CFS_PERIOD_US}`);
    } else {
      const [mem, cpu] = dirs as [string, string];
      if (limits.memoryBytes !== undefined) {
        fs.writeFileSync(path.join(mem, "memory.limit_in_bytes"), String(limits.memoryBytes));
        tryWrite(path.join(mem, "memory.swappiness"), "0");
      }
      if (limits.cpuMilli !== undefined) {
        fs.writeFileSync(path.join(cpu, "cpu.cfs_period_us"), String(CFS_PERIOD_US));
        fs.writeFileSync(path.join(cpu, "cpu.cfs_quota_us"), String(quotaUs(limits.cpuMilli)));
      }
    }
    return dirs;
  }

  /** The pids in a cgroup (empty when it does not exist). */
  procs(dir: string): number[] {
    try {
      return fs.readFileSync(path.join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean).map(Number);
    } catch {
      return [];
    }
  }

  /** SIGKILLs every process of the pod's cgroups (the last sweep of a stop). */
  killPod(node: string, uid: string): number {
    let n = 0;
    for (const d of this.podDirs(node, uid)) for (const c of subdirs(d)) n += this.killAll(path.join(d, c));
    return n;
  }

  /** Removes the pod's cgroups (they must be empty: kill first). */
  removePod(node: string, uid: string): void {
    for (const d of this.podDirs(node, uid)) {
      for (const c of subdirs(d)) tryRmdir(path.join(d, c));
      tryRmdir(d);
      // The node's and choreo's dirs go with their last pod (busy ones stay).
      tryRmdir(path.dirname(d));
      tryRmdir(path.dirname(path.dirname(d)));
    }
  }

  /** Whether any cgroup directory of the node still exists. */
  nodeExists(node: string): boolean {
    return this.podDirs(node, "x").some((d) => fs.existsSync(path.dirname(d)));
  }

  private killAll(dir: string): number {
    const pids = this.procs(dir);
    for (const p of pids) signal(p, "SIGKILL");
    return pids.length;
  }

  /** v2: the memory and cpu controllers must be enabled in every ancestor's subtree_control. */
  private enableControllers(podDir: string): void {
    const rel = path.relative(this.root, podDir).split(path.sep);
    let d = this.root;
    for (const part of rel) {
      tryWrite(path.join(d, "cgroup.subtree_control"), "+memory +cpu");
      d = path.join(d, part);
    }
    tryWrite(path.join(d, "cgroup.subtree_control"), "+memory +cpu");
  }
}

/** Whether hierarchy `a` is mounted apart from `b` (not the same `cpu,cpuacct` mount under two names). */
function separateTree(root: string, a: string, b: string): boolean {
  try {
    return fs.realpathSync(path.join(root, a)) !== fs.realpathSync(path.join(root, b));
  } catch {
    return false;
  }
}

function quotaUs(milli: bigint): number {
  return Math.max(1000, Number((milli * BigInt(CFS_PERIOD_US)) / 1000n));
}

function subdirs(d: string): string[] {
  try {
    return fs
      .readdirSync(d, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch {
    return [];
  }
}

function tryRmdir(d: string): void {
  try {
    fs.rmdirSync(d);
  } catch {
    // absent, or still has processes (removed at the pod's stop)
  }
}

function tryWrite(f: string, v: string): void {
  try {
    fs.writeFileSync(f, v);
  } catch {
    // optional knob (no swap accounting, controller already on)
  }
}
