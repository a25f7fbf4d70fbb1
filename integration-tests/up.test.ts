// test-tier: servers
// The control plane's path: `choreo up --nodes 0 --hollow-nodes 3` brings
// up the control plane with hollow nodes and writes a kubeconfig; kubectl applies a
// pod from the Kubernetes docs, `choreo get pods` shows it Running on a
// node; SIGTERM stops everything; up again keeps the data.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { connect } from "@nats-io/transport-node";
import { Redis } from "ioredis";
import { connectBus } from "@choreo/kit/bus";
import { readCredentials, redisConnectUrl } from "@choreo/kit/secrets";
import { freePort, startProcess, waitFor, type ManagedProcess } from "@choreo/kit/testing";
import { ROOT } from "./support/cluster.js";
import { run } from "./support/kubectl.js";

describe("choreo up", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "choreo-up-"));
  let up: ManagedProcess | undefined;
  after(async () => {
    await up?.stop(20_000);
    rmSync(dir, { recursive: true, force: true });
  });

  it("brings up a cluster kubectl and choreo can use, and keeps data across a restart", async () => {
    const ports = await Promise.all(Array.from({ length: 6 }, () => freePort()));
    const args = [
      path.join(ROOT, "services/cli/bin/choreo.js"),
      "up",
      "--data-dir",
      path.join(dir, "data"),
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
      // The control plane on hollow nodes; up-real.test.ts brings up real nodes.
      "--nodes",
      "0",
      "--hollow-nodes",
      "3",
    ];
    const start = () => startProcess({ name: "choreo-up", cmd: process.execPath, args, cwd: dir, readyWhen: /choreo is up/, timeoutMs: 90_000 });
    up = await start();
    const kubeconfig = path.join(dir, "data", "kubeconfig");
    assert.ok(existsSync(kubeconfig));
    assert.match(up.output(), new RegExp(`kubeconfig:\\s+${kubeconfig.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}`));
    assert.match(up.output(), new RegExp(`https://127\\.0\\.0\\.1:${ports[3]}`));
    await assertNoAnonymousClient(path.join(dir, "data"), ports[0]!, ports[1]!);

    const file = path.join(dir, "pod.yaml");
    writeFileSync(
      file,
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: nginx\nspec:\n  containers:\n  - name: nginx\n    image: nginx:1.14.2\n    ports:\n    - containerPort: 80\n",
    );
    const applied = await run("kubectl", ["apply", "-f", file], kubeconfig);
    assert.equal(applied.code, 0, applied.stderr);
    // The scheduler binds it to one of the hollow nodes, whose agent runs it.
    const viaChoreo = await waitFor(
      async () => {
        const r = await run(process.execPath, [path.join(ROOT, "services/cli/bin/choreo.js"), "get", "pods", "-o", "wide"], kubeconfig, { cwd: dir });
        assert.equal(r.code, 0, r.stderr);
        return /^nginx\s+1\/1\s+Running\s+0\s+\S+\s+10\.128\.\d+\.\d+\s+hollow-/m.test(r.stdout) ? r : undefined;
      },
      { timeoutMs: 30_000, message: "nginx Running on a hollow node" },
    );
    assert.match(viaChoreo.stdout, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE/m);

    // An RC and its Service from examples/: Running pods and filled Endpoints, as kubectl shows them.
    const web = await run(process.execPath, [path.join(ROOT, "services/cli/bin/choreo.js"), "apply", "-f", path.join(ROOT, "examples/web.yaml")], kubeconfig, {
      cwd: dir,
    });
    assert.equal(web.code, 0, web.stderr);
    assert.match(web.stdout, /replicationcontroller\/web created/);
    await waitFor(
      async () => {
        const r = await run("kubectl", ["get", "pods", "-l", "app=web", "--no-headers"], kubeconfig);
        return r.stdout.split("\n").filter((l) => /\s1\/1\s+Running\s/.test(l)).length === 3;
      },
      { timeoutMs: 30_000, message: "3 web pods Running" },
    );
    const eps = await waitFor(
      async () => {
        const r = await run("kubectl", ["get", "endpoints", "web", "-o", "jsonpath={.subsets[*].addresses[*].ip}"], kubeconfig);
        return r.stdout.trim().split(/\s+/).filter(Boolean).length === 3 ? r.stdout : undefined;
      },
      { timeoutMs: 30_000, message: "3 endpoints" },
    );
    assert.match(eps, /^10\.\d+\.\d+\.\d+( 10\.\d+\.\d+\.\d+){2}$/);

    up.child.kill("SIGTERM");
    const exit = await up.exited;
    assert.equal(exit.code, 0, up.output());
    assert.ok(!existsSync(path.join(dir, "data", "up.pid")));

    up = await start();
    const again = await run("kubectl", ["get", "pod", "nginx", "-o", "name"], kubeconfig);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout.trim(), "pod/nginx");
  });
});

/** Redis's first reply line to a bare PING (no AUTH). */
function anonymousPing(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: "127.0.0.1", port }, () => sock.write("PING\r\n"));
    sock.once("data", (b: Buffer) => (resolve(b.toString().trim()), sock.destroy()));
    sock.once("error", reject);
  });
}

/**
 * The cluster `choreo up` started has no anonymous door: nats-server and
 * redis-server refuse a client without credentials, the credentials and the
 * servers' configs are 0600 (in 0700 directories), and the passwords are in
 * no command line and no log.
 */
async function assertNoAnonymousClient(data: string, natsPort: number, redisPort: number): Promise<void> {
  const files = ["nats/credentials", "nats/nats.conf", "redis/credentials", "redis/redis.conf"].map((f) => path.join(data, f));
  for (const f of files) assert.equal((statSync(f).mode & 0o777).toString(8), "600", f);
  for (const d of ["nats", "redis"]) assert.equal((statSync(path.join(data, d)).mode & 0o777).toString(8), "700", d);
  await assert.rejects(connect({ servers: `nats://127.0.0.1:${natsPort}`, maxReconnectAttempts: 0 }), /Authorization Violation/);
  assert.match(await anonymousPing(redisPort), /^-NOAUTH/);
  const nats = readCredentials(path.join(data, "nats/credentials"));
  const redis = readCredentials(path.join(data, "redis/credentials"));
  assert.equal(nats.user, "choreo");
  assert.equal(redis.user, "api");
  // With the files, the way every actor connects (CHOREO_NATS_CREDENTIALS / CHOREO_REDIS_CREDENTIALS).
  const nc = await connectBus(`nats://127.0.0.1:${natsPort}`, "up-test", path.join(data, "nats/credentials"));
  await nc.close();
  const r = new Redis(redisConnectUrl(`redis://127.0.0.1:${redisPort}`, path.join(data, "redis/credentials")));
  assert.equal(await r.ping(), "PONG");
  r.disconnect();
  // No password on any command line (`ps` shows argv to every local user) nor in the logs.
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    let argv = "";
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    for (const c of [nats, redis]) assert.ok(!argv.includes(c.password), `a password in the command line of pid ${pid}`);
  }
  for (const log of readdirSync(path.join(data, "logs"))) {
    const text = readFileSync(path.join(data, "logs", log), "utf8");
    for (const c of [nats, redis]) assert.ok(!text.includes(c.password), `a password in logs/${log}`);
  }
}
