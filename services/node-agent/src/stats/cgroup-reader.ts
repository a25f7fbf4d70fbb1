import fs from "node:fs";
import path from "node:path";
import { cpuStatUsageNs, inactiveFile, meminfoWorkingSet, procStatBusyNs, workingSet } from "./parse.js";

/** One reading of a cgroup (or the machine): cumulative CPU ns and the working set. */
export interface Reading {
  cpuNs: bigint;
  memoryBytes: bigint;
}

function read(file: string): string | undefined {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

function readBigint(file: string): bigint | undefined {
  const t = read(file)?.trim();
  return t && /^\d+$/.test(t) ? BigInt(t) : undefined;
}

/**
 * Reads CPU and memory accounting of cgroups by their path relative to the
 * hierarchy root (`docker/<id>`, `choreo/<node>/<uid>/<container>`), on
 * cgroup v2 (one unified tree) or v1 (cpuacct and memory trees; on a hybrid
 * machine the unified tree's `cpu.stat` stands in when cpuacct lacks the
 * group).
 */
export class CgroupReader {
  readonly v2: boolean;
  private readonly cpuacct: string;
  private readonly memory: string;
  private readonly unified: string;

  constructor(private readonly root = "/sys/fs/cgroup") {
    this.v2 = fs.existsSync(path.join(root, "cgroup.controllers"));
    // v1 mounts cpuacct alone or together with cpu (`cpu,cpuacct`, with `cpuacct` a link to it on most distributions).
    this.cpuacct = ["cpuacct", "cpu,cpuacct", "cpuacct,cpu"].map((d) => path.join(root, d)).find((d) => fs.existsSync(d)) ?? path.join(root, "cpuacct");
    this.memory = path.join(root, "memory");
    this.unified = this.v2 ? root : path.join(root, "unified");
  }

  /** Whether a cgroup exists (in the memory tree on v1). */
  exists(rel: string): boolean {
    return fs.existsSync(path.join(this.v2 ? this.root : this.memory, rel));
  }

  /** The cgroup's reading; undefined when it does not exist (or is gone). */
  read(rel: string): Reading | undefined {
    const cpuNs = this.cpuNs(rel);
    const memoryBytes = this.memoryBytes(rel);
    return cpuNs === undefined || memoryBytes === undefined ? undefined : { cpuNs, memoryBytes };
  }

  private cpuNs(rel: string): bigint | undefined {
    if (!this.v2) {
      const v1 = readBigint(path.join(this.cpuacct, rel, "cpuacct.usage"));
      if (v1 !== undefined) return v1;
    }
    const stat = read(path.join(this.unified, rel, "cpu.stat"));
    return stat === undefined ? undefined : cpuStatUsageNs(stat);
  }

  private memoryBytes(rel: string): bigint | undefined {
    const dir = path.join(this.v2 ? this.root : this.memory, rel);
    const usage = readBigint(path.join(dir, this.v2 ? "memory.current" : "memory.usage_in_bytes"));
    if (usage === undefined) return undefined;
    return workingSet(usage, inactiveFile(read(path.join(dir, "memory.stat")) ?? ""));
  }
}

/** The machine's reading from /proc/stat and /proc/meminfo (what a real node reports for itself). */
export function machineReading(proc = "/proc"): Reading | undefined {
  const cpuNs = procStatBusyNs(read(path.join(proc, "stat")) ?? "");
  const memoryBytes = meminfoWorkingSet(read(path.join(proc, "meminfo")) ?? "");
  return cpuNs === undefined || memoryBytes === undefined ? undefined : { cpuNs, memoryBytes };
}
