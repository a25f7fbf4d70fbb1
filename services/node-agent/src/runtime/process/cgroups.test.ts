import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { Cgroups } from "./cgroups.js";

// Plain directories standing in for the cgroup mounts: the layout and the
// files written are what is checked (the kernel side runs in the runtime's tests).
const root = fs.mkdtempSync(path.join(os.tmpdir(), "choreo-cg-"));
const read = (...p: string[]) => fs.readFileSync(path.join(root, ...p), "utf8");

describe("cgroups", () => {
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it("v1: memory and cpu hierarchies, limit_in_bytes and a CFS quota", () => {
    const v1 = path.join(root, "v1");
    fs.mkdirSync(path.join(v1, "memory"), { recursive: true });
    const cg = new Cgroups(v1);
    assert.equal(cg.v2, false);
    const dirs = cg.create("n1", "u1", "app", { memoryBytes: 64n << 20n, cpuMilli: 250n });
    assert.deepEqual(dirs, [path.join(v1, "memory/choreo/n1/u1/app"), path.join(v1, "cpu/choreo/n1/u1/app")]);
    assert.equal(read("v1/memory/choreo/n1/u1/app/memory.limit_in_bytes"), String(64 * 1024 * 1024));
    assert.equal(read("v1/cpu/choreo/n1/u1/app/cpu.cfs_quota_us"), "25000");
    assert.equal(read("v1/cpu/choreo/n1/u1/app/cpu.cfs_period_us"), "100000");
    assert.equal(cg.oomFile(dirs), path.join(v1, "memory/choreo/n1/u1/app/memory.oom_control"));
    assert.equal(cg.nodeExists("n1"), true);
  });

  it("v1: containers join a cpuacct hierarchy mounted on its own (CPU usage for metrics), not one shared with cpu", () => {
    const apart = path.join(root, "v1-cpuacct");
    for (const d of ["memory", "cpu", "cpuacct"]) fs.mkdirSync(path.join(apart, d), { recursive: true });
    assert.deepEqual(
      new Cgroups(apart).containerDirs("n1", "u1", "app"),
      ["memory", "cpu", "cpuacct"].map((d) => path.join(apart, d, "choreo/n1/u1/app")),
    );
    const shared = path.join(root, "v1-shared");
    fs.mkdirSync(path.join(shared, "memory"), { recursive: true });
    fs.mkdirSync(path.join(shared, "cpu,cpuacct"), { recursive: true });
    fs.symlinkSync("cpu,cpuacct", path.join(shared, "cpu"));
    fs.symlinkSync("cpu,cpuacct", path.join(shared, "cpuacct"));
    assert.equal(new Cgroups(shared).containerDirs("n1", "u1", "app").length, 2);
  });

  it("v2: one unified hierarchy, controllers enabled down the path, memory.max and cpu.max", () => {
    const v2 = path.join(root, "v2");
    fs.mkdirSync(v2, { recursive: true });
    fs.writeFileSync(path.join(v2, "cgroup.controllers"), "cpu memory");
    const cg = new Cgroups(v2);
    assert.equal(cg.v2, true);
    const dirs = cg.create("n1", "u1", "app", { memoryBytes: 1n << 30n, cpuMilli: 2000n });
    assert.deepEqual(dirs, [path.join(v2, "choreo/n1/u1/app")]);
    assert.equal(read("v2/choreo/n1/u1/app/memory.max"), String(1 << 30));
    assert.equal(read("v2/choreo/n1/u1/app/memory.swap.max"), "0");
    assert.equal(read("v2/choreo/n1/u1/app/cpu.max"), "200000 100000");
    for (const d of ["", "choreo", "choreo/n1", "choreo/n1/u1"]) assert.equal(read("v2", d, "cgroup.subtree_control"), "+memory +cpu");
    assert.equal(cg.oomFile(dirs), path.join(v2, "choreo/n1/u1/app/memory.events"));
  });

  it("on the host: a pod's cgroups are made, emptied and removed with the node's", () => {
    const cg = new Cgroups();
    const node = `cgt${process.pid}`;
    const dirs = cg.create(node, "u1", "app", { memoryBytes: 32n << 20n });
    assert.equal(fs.existsSync(dirs[0]!), true);
    assert.deepEqual(cg.procs(dirs[0]!), []);
    cg.removePod(node, "u1");
    assert.equal(cg.nodeExists(node), false);
  });
});
