// test-tier: servers
// docker-compose.ha.yml on top of docker-compose.yml (compose v1): 3 NATS
// servers clustered, Redis primary + 2 replicas + 3 Sentinels, three api
// replicas behind HAProxy's container, the scheduler (the node agents are
// left out: compose.test.ts runs them, on the host's network). kubectl
// through HAProxy's published port is answered while the api-2 container is
// killed (SIGKILL) and started again (HAProxy marks it down and up again);
// the event stream is R3 and the sentinels watch 2 replicas, every Redis node
// with min-replicas-to-write 1; the Redis
// primary's container killed → kubectl writes again after the failover; a
// NATS member killed → writes go on; `down -v` leaves nothing of the project.
// Skipped (with the reason) only when no Docker engine or docker-compose answers.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { freePort, waitFor } from "@choreo/kit/testing";
import { composeSkipReason, script } from "./support/compose.js";
import { run } from "./support/kubectl.js";

const exec = promisify(execFile);

const skip = await composeSkipReason();

/** The monitoring port's stream details (inside the nats container: no curl there, bash's /dev/tcp). */
const jszAsk = "exec 3<>/dev/tcp/127.0.0.1/8222 && printf 'GET /jsz?accounts=true&streams=true&config=true HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3";

const SERVICES = [
  "secrets",
  "nats",
  "nats-2",
  "nats-3",
  "redis",
  "redis-2",
  "redis-3",
  "sentinel-1",
  "sentinel-2",
  "sentinel-3",
  "api",
  "api-2",
  "api-3",
  "haproxy",
  "scheduler",
];

describe("docker-compose.ha.yml: the HA control plane as containers", { skip, timeout: 30 * 60_000 }, () => {
  const project = `choreoha${process.pid}`;
  const dir = mkdtempSync(path.join(os.tmpdir(), "choreo-compose-ha-"));
  const kubeconfig = path.join(dir, "kubeconfig");
  let env: Record<string, string> = {};
  const compose = (...args: string[]) => script("docker-compose", ["-p", project, "-f", "docker-compose.yml", "-f", "docker-compose.ha.yml", ...args], env);
  /** HAProxy's view of the https backend's servers: `api-1 UP`, … */
  const lbStates = async (): Promise<Record<string, string>> => {
    // No curl in the image: bash's /dev/tcp asks the stats page on the container's loopback.
    const ask = "exec 3<>/dev/tcp/127.0.0.1/8404 && printf 'GET /stats;csv HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3";
    const out = await compose("exec", "-T", "haproxy", "bash", "-c", ask).catch(() => "");
    return Object.fromEntries(
      out
        .split("\n")
        .filter((l) => l.startsWith("https-replicas,api-"))
        .map((l) => [l.split(",")[1]!, l.split(",")[17]!]),
    );
  };

  before(
    async () => {
      await script("bash", ["infra/images/build.sh"]);
      const [https, http, grpc, nats] = [await freePort(), await freePort(), await freePort(), await freePort()];
      env = {
        CHOREO_COMPOSE_HTTPS_PORT: "0",
        CHOREO_COMPOSE_HTTP_PORT: "0",
        CHOREO_COMPOSE_NATS_PORT: String(nats),
        CHOREO_COMPOSE_NATS_2_PORT: String(await freePort()),
        CHOREO_COMPOSE_NATS_3_PORT: String(await freePort()),
        CHOREO_COMPOSE_HA_HTTPS_PORT: String(https),
        CHOREO_COMPOSE_HA_HTTP_PORT: String(http),
        CHOREO_COMPOSE_HA_GRPC_PORT: String(grpc),
      };
    },
    { timeout: 25 * 60_000 },
  );

  after(async () => {
    await compose("down", "-v", "--remove-orphans", "-t", "5").catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it("comes up; kubectl through HAProxy is answered while a replica's container is killed and back; down leaves nothing", async () => {
    await compose("up", "-d", "--no-build", ...SERVICES);
    const https = env["CHOREO_COMPOSE_HA_HTTPS_PORT"]!;
    // Each ask bounded by a (ref'd) 5 s timer: HAProxy accepts while no replica is up yet and may hold the request;
    // a fetch left pending with nothing else alive ended the test file ("Promise resolution is still pending but
    // the event loop has already resolved", seen once in CI).
    const readyz = async (): Promise<boolean> => {
      const ac = new AbortController();
      const timer = setTimeout(() => ac.abort(), 5_000);
      try {
        return (await fetch(`http://127.0.0.1:${env["CHOREO_COMPOSE_HA_HTTP_PORT"]}/readyz`, { signal: ac.signal })).ok;
      } finally {
        clearTimeout(timer);
      }
    };
    await waitFor(readyz, {
      timeoutMs: 180_000,
      intervalMs: 500,
      message: "the api through HAProxy's http port",
    });
    const token = (await compose("exec", "-T", "api", "sh", "-c", "grep -v '^#' /data/tokens | head -n 1")).trim();
    const ca = await compose("exec", "-T", "api", "cat", "/data/pki/apiserver.crt");
    writeFileSync(
      kubeconfig,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        "- name: ha",
        `  cluster: {server: "https://127.0.0.1:${https}", certificate-authority-data: ${Buffer.from(ca).toString("base64")}}`,
        "users:",
        "- name: admin",
        `  user: {token: "${token}"}`,
        "contexts:",
        "- name: ha",
        "  context: {cluster: ha, user: admin, namespace: default}",
        "current-context: ha",
        "",
      ].join("\n"),
    );
    // Every replica healthy (api-2 and api-3 start once api is) and UP in HAProxy.
    await waitFor(async () => Object.values(await lbStates()).filter((s) => s === "UP").length === 3, {
      timeoutMs: 180_000,
      intervalMs: 1_000,
      message: "HAProxy names api-1, api-2 and api-3 UP",
    });
    const created = await run("kubectl", ["create", "configmap", "before-kill", "--from-literal=a=b"], kubeconfig);
    assert.equal(created.code, 0, created.stderr);

    // The api-2 container killed while kubectl asks: answered; HAProxy marks it DOWN.
    let stop = false;
    const codes: number[] = [];
    const asking = (async () => {
      while (!stop) codes.push((await run("kubectl", ["get", "configmap", "before-kill", "-o", "name"], kubeconfig)).code);
    })();
    await new Promise((r) => setTimeout(r, 1_000));
    await script("docker", ["kill", "-s", "KILL", `${project}_api-2_1`]);
    // DOWN (its checks failed) or MAINT (resolution): a killed container's name leaves Docker's DNS, whichever HAProxy sees first.
    await waitFor(async () => /^(DOWN|MAINT)/.test((await lbStates())["api-2"] ?? ""), {
      timeoutMs: 20_000,
      intervalMs: 200,
      message: "HAProxy takes api-2 out (DOWN or MAINT)",
    });
    await new Promise((r) => setTimeout(r, 2_000));
    await script("docker", ["start", `${project}_api-2_1`]);
    await waitFor(async () => (await lbStates())["api-2"] === "UP", { timeoutMs: 120_000, intervalMs: 500, message: "HAProxy marks api-2 UP again" });
    stop = true;
    await asking;
    assert.ok(codes.length >= 3, `kubectl ran ${codes.length} times`);
    assert.ok(codes.filter((c) => c !== 0).length <= 1, `kubectl exit codes: ${codes.join(",")}`);

    // The HA shape: the event stream on 3 NATS servers, the sentinels watching a primary and 2 replicas.
    const jsz = await compose("exec", "-T", "nats", "bash", "-c", jszAsk);
    assert.match(jsz, /"num_replicas":\s*3/, `the event stream R3: ${jsz.slice(0, 2000)}`);
    const sentinelAsk = (cmd: string) =>
      compose("exec", "-T", "sentinel-1", "sh", "-c", `REDISCLI_AUTH=$(cut -d: -f2- /etc/redis/sentinel-credentials) redis-cli -p 26379 ${cmd}`);
    assert.match(await sentinelAsk("sentinel master choreo"), /num-slaves\s+2/);
    // Every Redis node refuses writes without a replica in sync (min-replicas-to-write 1): INFO shows the count
    // of good replicas only when that is set — 2 on the primary, 0 on a replica (it has none of its own).
    for (const [node, good] of [
      ["redis", 2],
      ["redis-2", 0],
      ["redis-3", 0],
    ] as const) {
      const info = await compose("exec", "-T", node, "sh", "-c", "REDISCLI_AUTH=$(cut -d: -f2- /etc/redis/credentials) redis-cli --user api info replication");
      assert.match(info, new RegExp(`min_slaves_good_slaves:${good}\\b`), `${node}: ${info}`);
    }

    // The Redis primary's container killed: the sentinels promote a replica, the api follows, kubectl writes again.
    const killedAt = Date.now();
    await script("docker", ["kill", "-s", "KILL", `${project}_redis_1`]);
    await waitFor(async () => (await sentinelAsk("sentinel get-master-addr-by-name choreo")).split("\n")[0]?.trim() !== "redis", {
      timeoutMs: 60_000,
      intervalMs: 500,
      message: "the sentinels promote a replica",
    });
    let n = 0;
    await waitFor(async () => (await run("kubectl", ["create", "configmap", `after-failover-${n++}`], kubeconfig)).code === 0, {
      timeoutMs: 60_000,
      intervalMs: 200,
      message: "kubectl writes after the Redis failover",
    });
    const redisBackMs = Date.now() - killedAt;
    // A NATS member's container killed: writes (answered once the R3 stream holds them) go on.
    await script("docker", ["kill", "-s", "KILL", `${project}_nats-2_1`]);
    await waitFor(async () => (await run("kubectl", ["create", "configmap", `after-nats-${n++}`], kubeconfig)).code === 0, {
      timeoutMs: 60_000,
      intervalMs: 200,
      message: "kubectl writes with a NATS member gone",
    });
    assert.equal((await run("kubectl", ["get", "configmap", "before-kill", "-o", "name"], kubeconfig)).code, 0, "the write before the faults is there");
    console.log(JSON.stringify({ kubectlRuns: codes.length, kubectlFailures: codes.filter((c) => c !== 0).length, redisKillToWriteMs: redisBackMs }));

    await compose("down", "-v", "--remove-orphans", "-t", "5");
    const { stdout } = await exec("docker", ["ps", "-aq", "--filter", `label=com.docker.compose.project=${project}`]);
    assert.equal(stdout.trim(), "", "no container of the project left");
  });
});
