import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import type { ContainerStatus, Pod, PodSpec } from "@choreo/kit/gen/choreo/core/v1/core";
import { NodeStatsRequest } from "@choreo/kit/gen/choreo/node/v1/stats";
import type { PodRuntimeStatus, RuntimePod } from "../runtime/runtime.js";
import { CgroupReader } from "./cgroup-reader.js";
import { CgroupUsage, RequestedUsage } from "./node-stats.js";
import { statsReply } from "./stats-server.js";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "stats-"));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function write(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

/** A runtime holding pods with running containers (what the usage sources read). */
function fakeRuntime(pods: { ref: RuntimePod; containers: { name: string; id: string; running?: boolean }[] }[]) {
  return {
    listPods: () => pods.map((p) => p.ref),
    podStatus(uid: string): PodRuntimeStatus | undefined {
      const p = pods.find((x) => x.ref.uid === uid);
      if (!p) return undefined;
      const statuses = p.containers.map(
        (c) =>
          ({
            name: c.name,
            containerId: c.id,
            state: c.running === false ? { waiting: { reason: "x", message: "" } } : { running: { startedAt: "" } },
          }) as ContainerStatus,
      );
      return { uid, podIp: "", startedAt: "", containerStatuses: statuses };
    },
  };
}

describe("cgroup readings", () => {
  it("v1: cpuacct.usage and memory usage less total_inactive_file; unified cpu.stat when cpuacct lacks the group", () => {
    const root = path.join(tmp, "v1");
    write(path.join(root, "cpuacct/docker/abc/cpuacct.usage"), "5000000000\n");
    write(path.join(root, "memory/docker/abc/memory.usage_in_bytes"), "1048576\n");
    write(path.join(root, "memory/docker/abc/memory.stat"), "cache 0\ninactive_file 1\ntotal_inactive_file 4096\n");
    write(path.join(root, "unified/choreo/n/u/c/cpu.stat"), "usage_usec 2000\n");
    write(path.join(root, "memory/choreo/n/u/c/memory.usage_in_bytes"), "8192\n");
    const r = new CgroupReader(root);
    assert.equal(r.v2, false);
    assert.deepEqual(r.read("docker/abc"), { cpuNs: 5_000_000_000n, memoryBytes: 1_048_576n - 4096n });
    assert.deepEqual(r.read("choreo/n/u/c"), { cpuNs: 2_000_000n, memoryBytes: 8192n });
    assert.equal(r.read("docker/gone"), undefined);
    assert.ok(r.exists("docker/abc"));
  });

  it("v2: cpu.stat usage_usec, memory.current less inactive_file", () => {
    const root = path.join(tmp, "v2");
    write(path.join(root, "cgroup.controllers"), "cpu memory\n");
    write(path.join(root, "system.slice/docker-abc.scope/cpu.stat"), "usage_usec 1500\nuser_usec 1000\n");
    write(path.join(root, "system.slice/docker-abc.scope/memory.current"), "40960\n");
    write(path.join(root, "system.slice/docker-abc.scope/memory.stat"), "anon 8192\ninactive_file 8192\n");
    const r = new CgroupReader(root);
    assert.equal(r.v2, true);
    assert.deepEqual(r.read("system.slice/docker-abc.scope"), { cpuNs: 1_500_000n, memoryBytes: 32_768n });
  });
});

describe("a real node's usage from its containers' cgroups", () => {
  it("rates per container id over the readings, the machine's too; stopped containers are dropped", () => {
    const root = path.join(tmp, "usage");
    const cg = (id: string, cpuNs: bigint, mem: number): void => {
      write(path.join(root, `cpuacct/docker/${id}/cpuacct.usage`), String(cpuNs));
      write(path.join(root, `memory/docker/${id}/memory.usage_in_bytes`), String(mem));
    };
    const ref = { uid: "u1", namespace: "default", name: "burn" };
    const containers = [
      { name: "busy", id: "docker://aaa" },
      { name: "idle", id: "docker://bbb" },
      { name: "waiting", id: "", running: false },
    ];
    const runtime = fakeRuntime([{ ref, containers }]);
    let machineCpu = 0n;
    const usage = new CgroupUsage({
      node: "n1",
      runtimeName: "docker",
      runtime,
      cgroups: new CgroupReader(root),
      machine: () => ({ cpuNs: machineCpu, memoryBytes: 1n << 30n }),
    });
    cg("aaa", 0n, 4096);
    cg("bbb", 0n, 8192);
    usage.sample(0);
    assert.equal(usage.usage().node, undefined, "one reading: no rate yet");
    assert.deepEqual(usage.usage().containers, []);
    cg("aaa", 5_000_000_000n, 4096);
    cg("bbb", 50_000_000n, 8192);
    machineCpu = 10_000_000_000n;
    usage.sample(5_000);
    const u = usage.usage();
    assert.equal(u.node?.cpuNanocores, 2_000_000_000n);
    const byName = new Map(u.containers.map((c) => [c.container, c.usage]));
    assert.equal(byName.get("busy")?.cpuNanocores, 1_000_000_000n);
    assert.equal(byName.get("idle")?.cpuNanocores, 10_000_000n);
    assert.equal(byName.get("idle")?.memoryBytes, 8192n);
    assert.equal(byName.has("waiting"), false);

    const reply = statsReply("n1", NodeStatsRequest.fromPartial({ pods: true }), u);
    assert.equal(reply.node, "n1");
    assert.equal(reply.nodeUsage?.cpuNanocores, 2e9);
    assert.equal(reply.nodeUsage?.windowMs, 5_000);
    assert.equal(reply.nodeUsage?.timestamp, new Date(5_000).toISOString());
    assert.deepEqual(
      reply.pods.map((p) => [p.namespace, p.name, p.uid, p.containers.map((c) => c.name).sort()]),
      [["default", "burn", "u1", ["busy", "idle"]]],
    );
    assert.deepEqual(statsReply("n1", NodeStatsRequest.fromPartial({ pods: false }), u).pods, []);
    assert.deepEqual(statsReply("n1", NodeStatsRequest.fromPartial({ pods: true, namespace: "other" }), u).pods, []);

    // The busy container stops: it is gone at the next reading.
    containers.shift();
    usage.sample(10_000);
    assert.deepEqual(
      usage.usage().containers.map((c) => c.container),
      ["idle"],
    );
  });
});

describe("a hollow node's usage", () => {
  it("each running container uses its requests; the node their sum", () => {
    const spec = (containers: { name: string; requests: Record<string, string> }[]): PodSpec =>
      ({ containers: containers.map((c) => ({ name: c.name, resources: { requests: c.requests, limits: {} } })) }) as unknown as PodSpec;
    const pods = new Map<string, Pod>([
      [
        "default/web",
        {
          metadata: { name: "web", namespace: "default", uid: "w1" },
          spec: spec([
            { name: "app", requests: { cpu: "250m", memory: "64Mi" } },
            { name: "side", requests: { cpu: "1" } },
          ]),
        } as Pod,
      ],
    ]);
    const runtime = fakeRuntime([
      {
        ref: { uid: "w1", namespace: "default", name: "web" },
        containers: [
          { name: "app", id: "hollow://w1/app" },
          { name: "side", id: "hollow://w1/side" },
        ],
      },
      // Not in the cache (or another incarnation): not reported.
      { ref: { uid: "zz", namespace: "default", name: "gone" }, containers: [{ name: "x", id: "hollow://zz/x" }] },
    ]);
    const usage = new RequestedUsage({ runtime, pods: { get: (k) => pods.get(k) } });
    usage.sample(1_000);
    const u = usage.usage();
    assert.deepEqual(
      u.containers.map((c) => [c.pod, c.container, c.usage.cpuNanocores, c.usage.memoryBytes]),
      [
        ["web", "app", 250_000_000n, 64n << 20n],
        ["web", "side", 1_000_000_000n, 0n],
      ],
    );
    assert.equal(u.node?.cpuNanocores, 1_250_000_000n);
    assert.equal(u.node?.memoryBytes, 64n << 20n);
    assert.equal(u.node?.endMs, 1_000);
  });
});
