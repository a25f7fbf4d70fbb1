// test-tier: servers
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { startProcess, waitFor, type ManagedProcess } from "@choreo/kit/testing";
import { startStack, type Stack } from "@choreo/api/testing";

describe("node-agent process", () => {
  let s: Stack;
  let proc: ManagedProcess | undefined;
  before(async () => {
    s = await startStack();
  });
  after(async () => {
    await proc?.stop(5_000);
    await s?.stop();
  });

  it("hosts --hollow-nodes N nodes that run pods, and stops on SIGTERM", async () => {
    proc = await startProcess({
      name: "node-agent",
      cmd: process.execPath,
      args: ["--import", "tsx", fileURLToPath(new URL("./main.ts", import.meta.url)), "--hollow-nodes", "3", "--node-name-prefix", "proc-"],
      env: { CHOREO_NATS_URL: s.nats.url, CHOREO_LOG_LEVEL: "warn" },
      cwd: fileURLToPath(new URL("../../..", import.meta.url)),
      timeoutMs: 20_000,
      readyCheck: async () => (await s.client.list("nodes")).items.length === 3,
    });
    const names = (await s.client.list("nodes")).items.map((o) => (unwrap(o) as Node).metadata?.name).sort();
    assert.deepEqual(names, ["proc-0", "proc-1", "proc-2"]);
    await s.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "p", namespace: "default" },
        spec: { nodeName: "proc-2", containers: [{ name: "c", image: "nginx" }] },
      }),
    );
    const pod = await waitFor(
      async () => {
        const p = unwrap(await s.client.get("pods", "default", "p")) as Pod;
        return p.status?.phase === "Running" ? p : undefined;
      },
      { timeoutMs: 20_000, message: "pod Running" },
    );
    assert.match(pod.status?.podIp ?? "", /^10\.128\.2\./);
    await proc.stop(10_000);
    const exit = await proc.exited;
    assert.equal(exit.code, 0, proc.output());
  });
});
