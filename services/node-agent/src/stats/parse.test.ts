import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cpuStatUsageNs, inactiveFile, meminfoWorkingSet, procStatBusyNs, workingSet } from "./parse.js";

describe("kernel accounting files", () => {
  it("working set is usage less inactive file cache, never negative (the kubelet's)", () => {
    assert.equal(workingSet(100n, 30n), 70n);
    assert.equal(workingSet(10n, 30n), 0n);
  });

  it("inactive file: v1's hierarchical total_inactive_file first, v2's inactive_file otherwise", () => {
    assert.equal(inactiveFile("cache 10\ninactive_file 5\ntotal_inactive_file 7\n"), 7n);
    assert.equal(inactiveFile("anon 4096\nfile 8192\ninactive_file 4096\n"), 4096n);
    assert.equal(inactiveFile(""), 0n);
  });

  it("cgroup v2 cpu.stat usage_usec in ns", () => {
    assert.equal(cpuStatUsageNs("usage_usec 1007528\nuser_usec 487381\nsystem_usec 520147\n"), 1_007_528_000n);
    assert.equal(cpuStatUsageNs("nr_periods 0\nnr_throttled 0\n"), undefined);
  });

  it("/proc/stat busy time: all but idle and iowait, in 10 ms jiffies", () => {
    const stat = "cpu  100 20 30 4000 50 6 7 8 0 0\ncpu0 50 10 15 2000 25 3 3 4 0 0\nintr 1\n";
    assert.equal(procStatBusyNs(stat), (100n + 20n + 30n + 6n + 7n + 8n) * 10_000_000n);
    assert.equal(procStatBusyNs("intr 1\n"), undefined);
  });

  it("/proc/meminfo working set: total − free − Inactive(file)", () => {
    const meminfo = "MemTotal:       1000 kB\nMemFree:         200 kB\nMemAvailable:    600 kB\nInactive(file):  300 kB\n";
    assert.equal(meminfoWorkingSet(meminfo), (1000n - 200n - 300n) * 1024n);
    assert.equal(meminfoWorkingSet("MemFree: 1 kB\n"), undefined);
  });
});
