// test-tier: servers
// `choreo up` as CI runs it (stdout a pipe): its steps, one plain line each
// with a duration and no escape code, in the order it takes them, then the
// summary; its own log (pino) on stderr and in <data-dir>/logs/up.log, never
// among the steps. And the event stream's front step: choreo up makes a
// read-only subscriber, names it in the kubeconfig (kubectl ignores it), and
// `choreo events` with no flag finds it; that user reads the stream but
// nats-server refuses it a publish and an api request.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream } from "@nats-io/jetstream";
import { connectBus, EVENT_STREAM } from "@choreo/kit/bus";
import { connectClient } from "@choreo/client";
import { readCredentials } from "@choreo/kit/secrets";
import { freePort, waitFor } from "@choreo/kit/testing";
import { ROOT } from "./support/cluster.js";
import { run } from "./support/kubectl.js";

const CHOREO = path.join(ROOT, "services/cli/bin/choreo.js");

/** The permission errors nats-server reported to `nc`. */
function permissionErrors(nc: NatsConnection): string[] {
  const seen: string[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === "error") seen.push(String(s.error?.message ?? s.error));
  })();
  return seen;
}

describe("choreo up's progress and its event-stream subscriber", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "choreo-up-progress-"));
  const data = path.join(dir, "data");
  let child: ChildProcess | undefined;
  after(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child?.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("prints its steps in order (plain, with durations), then the summary; choreo events finds the read-only subscriber by itself", async () => {
    const ports = await Promise.all(Array.from({ length: 6 }, () => freePort()));
    const flags = ["--nats-port", "--redis-port", "--http-port", "--https-port", "--grpc-port", "--metrics-port"];
    child = spawn(
      process.execPath,
      [CHOREO, "up", "--data-dir", data, "--nodes", "0", "--hollow-nodes", "2", ...flags.flatMap((f, i) => [f, String(ports[i])])],
      {
        cwd: dir,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, CHOREO_LOG_LEVEL: "info" },
      },
    );
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (b: Buffer) => (stdout += b.toString()));
    child.stderr?.on("data", (b: Buffer) => (stderr += b.toString()));
    await waitFor(
      () => {
        if (child?.exitCode !== null) throw new Error(`choreo up exited:\n${stdout}\n${stderr.slice(-3000)}`);
        return stdout.includes("choreo is up");
      },
      { timeoutMs: 180_000, intervalMs: 200, message: "choreo is up" },
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${stdout}\n${stderr.slice(-3000)}`);
    });

    // The steps, in order, each once, before the summary.
    const steps = stdout.slice(0, stdout.indexOf("choreo is up")).split("\n").filter(Boolean);
    const expected: [string, RegExp][] = [
      ["dependencies", /^✓ dependencies — present: nats-server, redis-server, openssl, npm dependencies \(\d+\.\ds\)$/],
      [
        "bus and store started",
        new RegExp(`^✓ bus and store started — nats://127\\.0\\.0\\.1:${ports[0]}, redis://127\\.0\\.0\\.1:${ports[1]} \\(\\d+\\.\\ds\\)$`),
      ],
      ["api ready", new RegExp(`^✓ api ready — https://127\\.0\\.0\\.1:${ports[3]} \\(\\d+\\.\\ds\\)$`)],
      ["hollow-nodes started", /^✓ hollow-nodes started — node agent of 2 hollow nodes; pid \d+ \(\d+\.\ds\)$/],
      ["scheduler started", /^✓ scheduler started — pid \d+ \(\d+\.\ds\)$/],
      ["replication started", /^✓ replication started — pid \d+ \(\d+\.\ds\)$/],
      ["endpoints started", /^✓ endpoints started — pid \d+ \(\d+\.\ds\)$/],
      ["nodes Ready", /^✓ nodes Ready — 2\/2 \(\d+\.\ds\)$/],
    ];
    assert.equal(steps.length, expected.length, steps.join("\n"));
    for (const [i, [name, line]] of expected.entries()) assert.match(steps[i] ?? "", line, `step ${i + 1} is ${name}:\n${steps.join("\n")}`);
    // Not a terminal: no escape code anywhere, and no log line (pino JSON) on stdout.
    assert.doesNotMatch(stdout, /\x1b/);
    assert.doesNotMatch(stdout, /^\{"level"/m);
    // The log: on stderr (a pipe) and in the file, the same lines.
    assert.match(stderr, /"msg":"cluster up; supervising"/);
    assert.match(readFileSync(path.join(data, "logs", "up.log"), "utf8"), /"msg":"cluster up; supervising"/);

    // The summary names the subscriber's credentials; the file is 0600.
    const creds = path.join(data, "nats", "subscriber.credentials");
    assert.match(stdout, new RegExp(`subscriber \\(0600\\): +${creds.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}`));
    assert.equal((statSync(creds).mode & 0o777).toString(8), "600");
    // The kubeconfig names the event log for choreo; kubectl reads the file as before.
    const kubeconfig = path.join(data, "kubeconfig");
    const yaml = readFileSync(kubeconfig, "utf8");
    assert.match(yaml, /- name: events\.choreo\.dev\n {6}extension:\n {8}nats-url: "nats:\/\/127\.0\.0\.1:\d+"\n {8}credentials: ".*subscriber\.credentials"/);
    const nodes = await run("kubectl", ["get", "nodes", "-o", "name"], kubeconfig);
    assert.equal(nodes.code, 0, nodes.stderr);
    assert.equal(nodes.stdout.trim().split("\n").length, 2);

    // choreo events with no flag and no CHOREO_NATS_* variable: the kubeconfig's cluster says where and as whom.
    const env = { ...process.env, KUBECONFIG: kubeconfig } as Record<string, string>;
    delete env["CHOREO_NATS_URL"];
    delete env["CHOREO_NATS_CREDENTIALS"];
    const events = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const c = spawn(process.execPath, [CHOREO, "events", "--since", "0"], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      let err = "";
      c.stdout.on("data", (b: Buffer) => (out += b.toString()));
      c.stderr.on("data", (b: Buffer) => (err += b.toString()));
      c.on("exit", (code) => resolve({ code, stdout: out, stderr: err }));
    });
    assert.equal(events.code, 0, events.stderr);
    assert.match(events.stdout, /^\d+\s+ADDED\s+Namespace\s+\/?default\b/m);
    assert.match(events.stdout, /^\d+\s+ADDED\s+Node\s+\/?hollow-/m);
    // Nothing from the api: choreo events spoke to NATS only, with the subscriber's user.

    // That user: reads the stream; a publish and an api request are refused by nats-server.
    assert.equal(readCredentials(creds).user, "subscriber");
    // As any client of the bus connects (its own inboxes: the only ones nats-server lets a restricted user subscribe to).
    const nc = await connectBus(`nats://127.0.0.1:${ports[0]}`, "up-progress-test", creds);
    try {
      const errors = permissionErrors(nc);
      const consumer = await jetstream(nc).consumers.get(EVENT_STREAM, { filter_subjects: "choreo.ev.>", deliver_policy: DeliverPolicy.All });
      const first = await consumer.next({ expires: 10_000 });
      assert.match(first?.subject ?? "", /^choreo\.ev\./);
      nc.publish("choreo.ev.pods._.default.forged", "forged");
      await waitFor(() => errors.some((e) => /Permissions Violation for Publish to "choreo\.ev\.pods\._\.default\.forged"/.test(e)), {
        timeoutMs: 10_000,
        message: `the server refuses the publish (${errors.join("; ")})`,
      });
      // No answer (the server drops it and says why on the connection).
      await assert.rejects(nc.request("choreo.api.list", "{}", { timeout: 5_000 }));
      await waitFor(() => errors.some((e) => /Permissions Violation for Publish to "choreo\.api\.list"/.test(e)), {
        timeoutMs: 10_000,
        message: `the server refuses the api request (${errors.join("; ")})`,
      });
    } finally {
      await nc.close();
    }

    // @choreo/client from the kubeconfig alone: the https server, the gRPC door it names (grpc.choreo.dev)
    // and the bus (events.choreo.dev) — there as the read-only subscriber: subscribe() reads, the api is not its to call.
    assert.match(yaml, /- name: grpc\.choreo\.dev\n {6}extension:\n {8}server: "grpcs:\/\/127\.0\.0\.1:\d+"/);
    for (const transport of ["http", "grpc"] as const) {
      const client = await connectClient({ kubeconfig, transport });
      try {
        assert.equal((await client.list("nodes")).items.length, 2, `${transport}: both nodes`);
      } finally {
        await client.close();
      }
    }
    const sub = await connectClient({ kubeconfig, transport: "nats" });
    try {
      for await (const ev of sub.subscribe({ resource: "nodes", fromRevision: 0 })) {
        assert.equal(ev.kind.kind, "Node", "the first Node change, read from the log as the subscriber");
        break;
      }
      await assert.rejects(sub.list("nodes"), "the subscriber may not call the api");
    } finally {
      await sub.close();
    }

    const exited = new Promise<number | null>((r) => child?.once("exit", r));
    child.kill("SIGTERM");
    assert.equal(await exited, 0, stdout);
    assert.ok(!existsSync(path.join(data, "up.pid")));
  });
});
