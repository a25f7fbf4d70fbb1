// The supervisor of `choreo up` on real child processes (sleep): restarts a
// killed one with a new pid (logged, pid file rewritten), retries a failed
// restart, and restarts nothing once the cluster is stopping.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { createLogger } from "@choreo/kit/log";
import { startProcess, waitFor, type ManagedProcess } from "@choreo/kit/process";
import { nodePodCidrs, noticeOf } from "./cluster.js";
import { processStartTime, Shutdown, supervise } from "./supervisor.js";

const FAST = { initialMs: 20, maxMs: 50 };

function sleeper(): Promise<ManagedProcess> {
  return startProcess({ name: "sleep", cmd: "sleep", args: ["600"], readyCheck: () => Promise.resolve(true) });
}

/** A pino logger whose lines are kept, parsed. */
function recordingLogger(): { log: ReturnType<typeof createLogger>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger({
    service: "test",
    level: "info",
    destination: { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) },
  });
  return { log, lines };
}

describe("supervise", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "choreo-supervise-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("restarts a process killed with -9 after the backoff, logs it and records the new pid", async () => {
    const { log, lines } = recordingLogger();
    const shutdown = new Shutdown();
    const sup = await supervise({ name: "s1", launch: sleeper, shutdown, log, logFile: "/dev/null", pidDir: dir, backoff: FAST });
    const first = sup.current();
    assert.equal(readFileSync(path.join(dir, "s1"), "utf8"), `${first.pid} ${processStartTime(first.pid)}\n`);
    process.kill(first.pid, "SIGKILL");
    const second = await waitFor(() => (sup.current().pid !== first.pid ? sup.current() : undefined), { timeoutMs: 10_000 });
    assert.ok(second.isRunning());
    await waitFor(() => readFileSync(path.join(dir, "s1"), "utf8").startsWith(`${second.pid} `), { timeoutMs: 5_000 });
    const exited = lines.find((l) => l["msg"] === "process exited; restarting");
    assert.equal(exited?.["process"], "s1");
    assert.equal(exited?.["pid"], first.pid);
    assert.equal(exited?.["signal"], "SIGKILL");
    assert.equal(exited?.["level"], 40);
    await waitFor(() => lines.some((l) => l["msg"] === "process restarted" && l["pid"] === second.pid), { timeoutMs: 5_000 });
    await sup.stop(5_000);
    assert.ok(!second.isRunning());
    assert.throws(() => readFileSync(path.join(dir, "s1")), /ENOENT/, "the pid file goes with a clean stop");
  });

  it("retries a restart that fails, on the backoff", async () => {
    const { log, lines } = recordingLogger();
    let launches = 0;
    const sup = await supervise({
      name: "s2",
      launch: async () => {
        launches++;
        if (launches === 2) throw new Error("port in use\nmore");
        return sleeper();
      },
      shutdown: new Shutdown(),
      log,
      logFile: "/dev/null",
      pidDir: dir,
      backoff: FAST,
    });
    await sup.current().kill();
    await waitFor(() => launches === 3 && sup.current().isRunning(), { timeoutMs: 10_000 });
    const failed = lines.find((l) => l["msg"] === "process restart failed");
    assert.equal(failed?.["err"], "port in use");
    await sup.stop(5_000);
  });

  it("restarts nothing once the cluster is stopping: children that exit on their own stay down, unlogged", async () => {
    const { log, lines } = recordingLogger();
    const shutdown = new Shutdown();
    const a = await supervise({ name: "a", launch: sleeper, shutdown, log, logFile: "/dev/null", pidDir: dir, backoff: FAST });
    const b = await supervise({ name: "b", launch: sleeper, shutdown, log, logFile: "/dev/null", pidDir: dir, backoff: FAST });
    const [pa, pb] = [a.current(), b.current()];
    // As a terminal's Ctrl-C: the flag first (the parent's handler), then every child gets the signal itself.
    shutdown.begin();
    pa.child.kill("SIGINT");
    pb.child.kill("SIGINT");
    await Promise.all([pa.exited, pb.exited]);
    // b is stopped only after a (what choreo up does in order); neither came back meanwhile.
    await a.stop(5_000);
    await b.stop(5_000);
    assert.equal(a.current(), pa);
    assert.equal(b.current(), pb);
    assert.deepEqual(
      lines.filter((l) => String(l["msg"]).includes("restart")),
      [],
    );
  });
});

describe("nodePodCidrs", () => {
  it("gives node i the i-th /24 of the cluster CIDR", () => {
    assert.deepEqual(nodePodCidrs("10.244.0.0/16", 2), ["10.244.1.0/24", "10.244.2.0/24"]);
    assert.deepEqual(nodePodCidrs("10.244.160.0/20", 3), ["10.244.161.0/24", "10.244.162.0/24", "10.244.163.0/24"]);
    assert.deepEqual(nodePodCidrs("10.244.42.0/23", 1), ["10.244.43.0/24"]);
    assert.deepEqual(nodePodCidrs("10.0.0.0/8", 0), []);
  });
  it("refuses what is no IPv4 CIDR of /8 to /24, or too small for the nodes", () => {
    for (const bad of ["10.244.0.0", "10.244.0.0/25", "300.1.1.0/16", "fd00::/64", "10.244.0.0/7"]) assert.throws(() => nodePodCidrs(bad, 1), /--cluster-cidr/);
    assert.throws(() => nodePodCidrs("10.244.42.0/23", 2), /no room for 2 nodes/);
  });
});

describe("noticeOf (choreo up's warnings on a terminal)", () => {
  it("turns a warning or an error log line into one short line; nothing below warn or for what is not JSON", () => {
    const warn = JSON.stringify({
      level: 40,
      time: "t",
      service: "choreo-up",
      process: "api",
      pid: 12,
      code: 1,
      signal: null,
      msg: "process exited; restarting",
    });
    assert.equal(noticeOf(warn), "! process exited; restarting (process=api pid=12 code=1)");
    assert.equal(
      noticeOf(JSON.stringify({ level: 50, msg: "process restart failed", err: "spawn ENOENT", retryInMs: 2000 })),
      "! process restart failed (err=spawn ENOENT retryInMs=2000)",
    );
    assert.equal(noticeOf(JSON.stringify({ level: 30, msg: "cluster up; supervising" })), undefined);
    assert.equal(noticeOf("not json"), undefined);
  });
});
