// kubectl get pods' STATUS of a pod with init containers, after kubectl's printPod (pkg/printers/internalversion/printers.go).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { podStatus } from "./pods.js";

const spec = { initContainers: [{ name: "one" }, { name: "two" }], containers: [{ name: "app" }] };
const waiting = (name: string, reason: string, restartCount = 0) => ({ name, restartCount, state: { waiting: { reason } } });
const done = (name: string) => ({ name, restartCount: 0, state: { terminated: { exitCode: 0, reason: "Completed" } } });
const failed = (name: string, restartCount = 0) => ({ name, restartCount, state: { terminated: { exitCode: 1, reason: "Error" } } });
const status = (phase: string, inits: unknown[], apps: unknown[], initialized = false) =>
  podStatus(
    {
      metadata: { name: "p" },
      spec,
      status: {
        phase,
        conditions: [{ type: "Initialized", status: initialized ? "True" : "False" }],
        initContainerStatuses: inits,
        containerStatuses: apps,
      },
    },
    Date.parse("2025-01-01T00:00:00Z"),
  );

describe("pods table: init containers", () => {
  it("Init:i/n while they run, Init:<reason> when one fails or backs off, PodInitializing before the app runs", () => {
    const app = waiting("app", "PodInitializing");
    assert.equal(status("Pending", [waiting("one", "PodInitializing"), waiting("two", "PodInitializing")], [app]).reason, "Init:0/2");
    assert.equal(status("Pending", [done("one"), { name: "two", restartCount: 0, state: { running: {} } }], [app]).reason, "Init:1/2");
    assert.equal(status("Pending", [failed("one", 1), waiting("two", "PodInitializing")], [app]).reason, "Init:Error");
    const crashLoop = status("Pending", [{ ...waiting("one", "CrashLoopBackOff", 3) }, waiting("two", "PodInitializing")], [app]);
    assert.deepEqual([crashLoop.reason, crashLoop.restarts], ["Init:CrashLoopBackOff", "3"]);
    assert.equal(status("Failed", [failed("one"), waiting("two", "PodInitializing")], [app]).reason, "Init:Error");
    assert.equal(status("Pending", [done("one"), done("two")], [app], true).reason, "PodInitializing");
    const running = status("Running", [done("one"), done("two")], [{ name: "app", ready: true, restartCount: 0, state: { running: {} } }], true);
    assert.deepEqual([running.ready, running.reason], ["1/1", "Running"]);
  });
});
