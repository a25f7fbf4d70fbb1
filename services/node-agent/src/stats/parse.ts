// Parsers of the kernel's accounting files (pure: text in, numbers out).

/** Kubernetes' USER_HZ assumption for /proc/stat: jiffies of 10 ms. */
const NS_PER_JIFFY = 10_000_000n;

/** `key value` lines (memory.stat, cpu.stat) as a map; unparsable lines are skipped. */
export function keyValues(text: string): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const line of text.split("\n")) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v && /^\d+$/.test(v)) out.set(k, BigInt(v));
  }
  return out;
}

/**
 * The working set as the kubelet (cadvisor) computes it: usage less the
 * inactive file cache (pages the kernel may drop at once), never negative.
 */
export function workingSet(usage: bigint, inactiveFile: bigint): bigint {
  return usage > inactiveFile ? usage - inactiveFile : 0n;
}

/**
 * The inactive file cache in a memory.stat: `inactive_file` (cgroup v2),
 * `total_inactive_file` (v1, hierarchical) before its local `inactive_file`.
 */
export function inactiveFile(memoryStat: string): bigint {
  const kv = keyValues(memoryStat);
  return kv.get("total_inactive_file") ?? kv.get("inactive_file") ?? 0n;
}

/** Cumulative CPU time in ns from a cgroup v2 `cpu.stat` (`usage_usec`); undefined when absent. */
export function cpuStatUsageNs(cpuStat: string): bigint | undefined {
  const usec = keyValues(cpuStat).get("usage_usec");
  return usec === undefined ? undefined : usec * 1000n;
}

/**
 * Cumulative busy CPU time of the machine in ns from /proc/stat's `cpu`
 * line: everything but idle and iowait (guest time is inside user already).
 */
export function procStatBusyNs(procStat: string): bigint | undefined {
  const line = procStat.split("\n").find((l) => l.startsWith("cpu "));
  if (!line) return undefined;
  const f = line.trim().split(/\s+/).slice(1).map(BigInt);
  // user nice system idle iowait irq softirq steal guest guest_nice
  const [user = 0n, nice = 0n, system = 0n, , , irq = 0n, softirq = 0n, steal = 0n] = f;
  return (user + nice + system + irq + softirq + steal) * NS_PER_JIFFY;
}

/**
 * The machine's working set in bytes from /proc/meminfo: what the root
 * cgroup would call usage (total less free) less the inactive file cache.
 */
export function meminfoWorkingSet(meminfo: string): bigint | undefined {
  const kb = new Map<string, bigint>();
  for (const line of meminfo.split("\n")) {
    const m = /^([^:]+):\s+(\d+)(?:\s+kB)?$/.exec(line.trim());
    if (m) kb.set(m[1]!, BigInt(m[2]!) * 1024n);
  }
  const total = kb.get("MemTotal");
  const free = kb.get("MemFree");
  if (total === undefined || free === undefined) return undefined;
  return workingSet(total - free, kb.get("Inactive(file)") ?? 0n);
}
