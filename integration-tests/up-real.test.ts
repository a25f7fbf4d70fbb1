// test-tier: servers
// The new user's path (npm start): `choreo up` brings up two real nodes,
// builds its local images, applies examples/ and prints how to reach the web
// app; the app answers through its Service's NodePort with pods on both
// nodes; Ctrl-C leaves no containers, namespaces, veths or firewall rules.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { freePort, startProcess, waitFor, type ManagedProcess } from "@choreo/kit/testing";
import { LABELS, NAMES } from "@choreo/node-agent/net/types";
import { ROOT } from "./support/cluster.js";
import { run } from "./support/kubectl.js";
import { dockerAvailable } from "./support/real-cluster.js";

describe("choreo up with real nodes", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "choreo-up-real-"));
  let up: ManagedProcess | undefined;
  after(async () => {
    await up?.stop(60_000);
    rmSync(dir, { recursive: true, force: true });
  });

  it("runs the example app on two nodes, reachable on localhost through its Service, and Ctrl-C leaves nothing behind", async () => {
    const ports = await Promise.all(Array.from({ length: 6 }, () => freePort()));
    const runtime = dockerAvailable() ? "docker" : "process";
    up = await startProcess({
      name: "choreo-up",
      cmd: process.execPath,
      cwd: dir,
      timeoutMs: 240_000,
      args: [
        path.join(ROOT, "services/cli/bin/choreo.js"),
        "up",
        "--data-dir",
        path.join(dir, "data"),
        "--runtime",
        runtime,
        "--nats-port",
        String(ports[0]),
        "--redis-port",
        String(ports[1]),
        "--http-port",
        String(ports[2]),
        "--https-port",
        String(ports[3]),
        "--grpc-port",
        String(ports[4]),
        "--metrics-port",
        String(ports[5]),
      ],
      readyWhen: /The web app (answers|is starting)/,
    });
    assert.match(up.output(), new RegExp(`nodes:\\s+2 × ${runtime} runtime`));
    // Its steps, one plain line each (stdout is a pipe), in order, before the summary.
    const steps = ["dependencies", "bus and store started", "api ready", "images ready", "node-1 started", "node-2 started"];
    steps.push("scheduler started", "replication started", "endpoints started", "nodes Ready", "examples applied");
    const at = steps.map((s) => up!.output().search(new RegExp(`^✓ ${s} — .+ \\((\\d+\\.\\d|\\d+m\\d\\d)s\\)$`, "m")));
    assert.ok(
      at.every((x, i) => x >= 0 && (i === 0 || x > at[i - 1]!)) && at.at(-1)! < up.output().indexOf("choreo is up"),
      `steps in order: ${steps.map((s, i) => `${s}@${at[i]}`).join(", ")}\n${up.output().slice(0, 3000)}`,
    );
    assert.match(up.output(), new RegExp(`^✓ images ready — ${runtime} runtime; `, "m"));
    assert.match(up.output(), /^✓ nodes Ready — 2\/2 /m);
    assert.match(up.output(), /^✓ examples applied — \d+ objects; the web app (answers on http:\/\/127\.0\.0\.1:30080\/|is still starting) /m);
    assert.match(up.output(), /replicationcontroller\/web created/);
    assert.match(up.output(), /pod\/sidecar created/);
    const answer = await waitFor(
      async () => {
        try {
          const r = await fetch("http://127.0.0.1:30080/", { signal: AbortSignal.timeout(2_000) });
          return r.ok ? (await r.text()).trim() : undefined;
        } catch {
          return undefined;
        }
      },
      { timeoutMs: 120_000, message: "the web app answers on 127.0.0.1:30080" },
    );
    assert.match(answer, /^web-[a-z0-9]{5}$/);

    const kubeconfig = path.join(dir, "data", "kubeconfig");
    const wide = await waitFor(
      async () => {
        const r = await run(
          process.execPath,
          [path.join(ROOT, "services/cli/bin/choreo.js"), "get", "pods", "-l", "app=web", "-o", "wide", "--no-headers"],
          kubeconfig,
          { cwd: dir },
        );
        const running = r.stdout.split("\n").filter((l) => /\s1\/1\s+Running\s/.test(l));
        return running.length === 3 ? running : undefined;
      },
      { timeoutMs: 120_000, message: "3 web pods Running and ready" },
    );
    const nodes = new Set(wide.map((l) => /\s(node-\d)\s/.exec(l)?.[1]));
    assert.deepEqual([...nodes].sort(), ["node-1", "node-2"], "pods on both nodes");

    // This cluster's pods, to look for their namespaces and veths afterwards (other tests' pods may run beside).
    const uids = (await run("kubectl", ["get", "pods", "-o", "jsonpath={.items[*].metadata.uid}"], kubeconfig)).stdout.split(/\s+/).filter(Boolean);
    assert.ok(uids.length >= 4, "the web pods and the sidecar");

    up.child.kill("SIGINT");
    const exit = await up.exited;
    assert.equal(exit.code, 0, up.output());
    // Nothing of node-1 and node-2 is left on the machine.
    const links = execFileSync("ip", ["-o", "link", "show"], { encoding: "utf8" });
    for (const n of ["node-1", "node-2"]) {
      assert.ok(!links.includes(`${NAMES.bridge(n)}:`), `bridge of ${n} removed`);
      for (const table of ["filter", "nat"])
        assert.ok(!execFileSync("iptables-save", ["-t", table], { encoding: "utf8" }).includes(NAMES.chainPrefix(n)), `${table} chains of ${n} removed`);
      if (runtime === "docker")
        assert.equal(
          execFileSync("docker", ["ps", "-aq", "--filter", `label=${LABELS.node}=${n}`], { encoding: "utf8" }).trim(),
          "",
          `containers of ${n} removed`,
        );
    }
    const stateDir = path.join(dir, "data", "nodes");
    for (const n of ["node-1", "node-2"]) {
      const pods = path.join(stateDir, n, "pods");
      const uids = existsSync(pods) ? readdirSync(pods) : [];
      // The agents remove their pods' directories as they stop them; node-setup's clean-up removes what an agent left.
      const setupLog = path.join(dir, "data", "logs", "node-setup.log");
      assert.deepEqual(
        uids,
        [],
        `no pod state left on ${n}; node-setup's log:\n${existsSync(setupLog) ? readFileSync(setupLog, "utf8").slice(-3000) : "(none)"}`,
      );
    }
    const namespaces = existsSync("/run/netns") ? readdirSync("/run/netns") : [];
    for (const uid of uids) {
      assert.ok(!namespaces.includes(NAMES.netns(uid)), `no namespace of pod ${uid}`);
      assert.ok(!links.includes(`${NAMES.veth(uid)}@`), `no veth of pod ${uid}`);
    }
  });
});
