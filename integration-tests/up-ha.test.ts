// test-tier: servers
// `choreo up --ha` (issue 16, HA control plane): 3 nats-servers (R3 event
// stream), a Redis primary + 2 replicas + 3 Sentinels, 3 api replicas behind
// HAProxy on the cluster's ports, actors and hollow nodes — every process
// supervised. kubectl through HAProxy keeps being answered while an api
// replica is killed -9; the supervisor starts it again and HAProxy marks it
// UP; HAProxy killed -9 is started again and kubectl answered (time printed);
// `choreo down` stops everything and leaves no process behind.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { adminCommand } from "@choreo/kit/process";
import { freePort, waitFor } from "@choreo/kit/testing";
import { ROOT } from "./support/cluster.js";
import { run } from "./support/kubectl.js";

const CHOREO = path.join(ROOT, "services/cli/bin/choreo.js");

const pidOf = (data: string, name: string): number => Number(readFileSync(path.join(data, "pids", name), "utf8").split(" ")[0]);
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** HAProxy's state of `server` behind the https listener (UP, DOWN …). */
async function lbState(data: string, server: string): Promise<string> {
  const csv = await adminCommand(path.join(data, "haproxy", "admin.sock"), "show stat");
  const row = csv.split("\n").find((l) => l.startsWith(`https-replicas,${server},`));
  return row?.split(",")[17] ?? "";
}

describe("choreo up --ha", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "choreo-up-ha-"));
  const data = path.join(dir, "data");
  let out = "";
  after(async () => {
    await new Promise((r) => spawn(process.execPath, [CHOREO, "down", "--data-dir", data], { stdio: "ignore" }).on("exit", r));
    rmSync(dir, { recursive: true, force: true });
  });

  it("brings up the HA control plane behind HAProxy; an api replica killed is not noticed by kubectl and comes back; down leaves nothing", async () => {
    const ports = await Promise.all(Array.from({ length: 4 }, () => freePort()));
    const up = spawn(
      process.execPath,
      [
        CHOREO,
        "up",
        "--ha",
        "--data-dir",
        data,
        "--nodes",
        "0",
        "--hollow-nodes",
        "2",
        "--no-examples",
        ...["--http-port", "--https-port", "--grpc-port", "--metrics-port"].flatMap((f, i) => [f, String(ports[i])]),
      ],
      { cwd: dir, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CHOREO_LOG_LEVEL: "info" } },
    );
    up.stdout.on("data", (b: Buffer) => (out += b.toString()));
    up.stderr.on("data", (b: Buffer) => (out += b.toString()));
    const exited = new Promise((r) => up.on("exit", r));
    await waitFor(() => out.includes("choreo is up"), { timeoutMs: 240_000, intervalMs: 200, message: "choreo is up" }).catch((err: Error) => {
      throw new Error(`${err.message}\n${out.slice(-4000)}`);
    });
    assert.match(out, /api replicas: +3 behind HAProxy/);
    assert.match(out, /redis\+sentinel:\/\//);
    const names = readdirSync(path.join(data, "pids")).sort();
    for (const n of [
      "api-0",
      "api-1",
      "api-2",
      "haproxy",
      "nats-0",
      "nats-1",
      "nats-2",
      "redis-0",
      "redis-1",
      "redis-2",
      "sentinel-0",
      "sentinel-1",
      "sentinel-2",
    ])
      assert.ok(names.includes(n), `${n} supervised (${names.join(", ")})`);
    const kubeconfig = path.join(data, "kubeconfig");
    assert.match(readFileSync(kubeconfig, "utf8"), new RegExp(`server: https://127.0.0.1:${ports[1]}`));
    await waitFor(async () => (await run("kubectl", ["get", "nodes", "-o", "name"], kubeconfig)).stdout.split("\n").filter(Boolean).length === 2, {
      timeoutMs: 60_000,
      message: "two hollow nodes through HAProxy",
    });

    // kill -9 of an api replica while kubectl asks: answered every time; restarted by the supervisor, marked UP.
    const killed = pidOf(data, "api-1");
    let stop = false;
    const answers: number[] = [];
    const asking = (async () => {
      while (!stop) answers.push((await run("kubectl", ["get", "nodes", "-o", "name"], kubeconfig)).code);
    })();
    await new Promise((r) => setTimeout(r, 500));
    process.kill(killed, "SIGKILL");
    await waitFor(() => alive(pidOf(data, "api-1")) && pidOf(data, "api-1") !== killed, { timeoutMs: 60_000, message: "api-1 restarted" });
    await waitFor(async () => (await lbState(data, "api-1")) === "UP", { timeoutMs: 20_000, message: "HAProxy marks api-1 UP" });
    stop = true;
    await asking;
    assert.ok(answers.length >= 3, `kubectl ran ${answers.length} times`);
    assert.ok(answers.filter((c) => c !== 0).length <= 1, `kubectl failures: ${answers.join(",")}`);

    // kill -9 of HAProxy itself: one process here; the supervisor starts it again on the same ports (~1 s backoff).
    const lbKilledAt = Date.now();
    process.kill(pidOf(data, "haproxy"), "SIGKILL");
    await waitFor(async () => (await run("kubectl", ["get", "nodes", "-o", "name"], kubeconfig)).code === 0 && Date.now() - lbKilledAt > 100, {
      timeoutMs: 30_000,
      intervalMs: 100,
      message: "kubectl answered after HAProxy's restart",
    });
    console.log(
      JSON.stringify({ kubectlRuns: answers.length, kubectlFailures: answers.filter((c) => c !== 0).length, haproxyKillToAnswerMs: Date.now() - lbKilledAt }),
    );

    // choreo down: every supervised process gone.
    const pids = readdirSync(path.join(data, "pids")).map((n) => pidOf(data, n));
    await new Promise((r) => spawn(process.execPath, [CHOREO, "down", "--data-dir", data], { stdio: "ignore" }).on("exit", r));
    await exited;
    const left = pids.filter(alive);
    assert.deepEqual(left, [], `left running: ${left.join(", ")}`);
  });
});
