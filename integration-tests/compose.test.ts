// test-tier: servers
// docker-compose.yml end to end, with Debian's docker-compose (v1) through
// testcontainers: the images build offline (infra/images/build.sh), `up`
// brings the cluster to health, kubectl and choreo see both node agents'
// nodes Ready and a pod runs as a real container on one of them, then `down`
// leaves no containers, networks or volumes of the project behind.
// Skipped (with the reason) only when no Docker engine or docker-compose answers.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { connect } from "@nats-io/transport-node";
import { freePort, waitFor } from "@choreo/kit/testing";
import { ROOT } from "./support/cluster.js";
import { run } from "./support/kubectl.js";

// No registry here: Ryuk's image cannot be pulled; the ports are on loopback.
process.env["TESTCONTAINERS_RYUK_DISABLED"] ??= "true";
process.env["TESTCONTAINERS_HOST_OVERRIDE"] ??= "127.0.0.1";
const { DockerComposeEnvironment, Wait } = await import("testcontainers");
type Started = Awaited<ReturnType<InstanceType<typeof DockerComposeEnvironment>["up"]>>;

const exec = promisify(execFile);
const NODES = ["compose-node-1", "compose-node-2"];
const CHOREO = path.join(ROOT, "services/cli/bin/choreo.js");

async function ok(cmd: string, args: string[]): Promise<boolean> {
  try {
    await exec(cmd, args, { timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
}

/** Runs a script to completion, its output kept for the failure message. */
function script(file: string, env: Record<string, string> = {}, timeoutMs = 20 * 60_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [path.join(ROOT, file)], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr.on("data", (b: Buffer) => (out += b.toString()));
    const timer = setTimeout(() => child.kill("SIGTERM"), timeoutMs);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`${file} failed (${signal ?? code}):\n${out.slice(-4000)}`));
    });
  });
}

async function dockerLines(args: string[]): Promise<string[]> {
  const { stdout } = await exec("docker", args);
  return stdout
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
}

const skip = !(await ok("docker", ["info"]))
  ? "no Docker engine answers (scripts/ensure-docker.sh starts one)"
  : !(await ok("docker-compose", ["version"]))
    ? "docker-compose is not installed (scripts/ensure-deps.sh installs it)"
    : false;

describe("docker-compose.yml (compose v1)", { skip, timeout: 30 * 60_000 }, () => {
  const project = `choreoct${process.pid}`;
  const dir = mkdtempSync(path.join(os.tmpdir(), "choreo-compose-"));
  const kubeconfig = path.join(dir, "kubeconfig");
  let env: Started | undefined;

  const name = (service: string): string => `${project}_${service}_1`;

  /** What the node agents made on the engine and the host: pods' containers, bridges, chains, state. */
  async function removeNodeLeftovers(): Promise<void> {
    for (const n of NODES) {
      const ids = await dockerLines(["ps", "-aq", "--filter", `label=dev.choreo.node=${n}`]);
      if (ids.length) await exec("docker", ["rm", "-f", ...ids]);
    }
    const { cleanupNode } = await import("@choreo/node-agent/net/cleanup");
    for (const n of NODES) {
      await cleanupNode(n).catch(() => undefined);
      rmSync(path.join("/var/lib/choreo", n), { recursive: true, force: true });
    }
  }

  before(
    async () => {
      // Offline image builds: the base (debootstrap) once per machine, then the layer cache.
      await script("infra/images/build.sh");
      await script("scripts/compose-host.sh");
    },
    { timeout: 25 * 60_000 },
  );

  after(async () => {
    // Normally `down` ran in the last test; this is the safety net after a failure.
    if (env) await env.down({ removeVolumes: true, timeout: 30_000 }).catch(() => undefined);
    // Also when `up` itself failed half-way (testcontainers then holds no handle).
    await exec("docker-compose", ["-p", project, "down", "-v", "--remove-orphans", "-t", "5"], { cwd: ROOT, timeout: 120_000 }).catch(() => undefined);
    await removeNodeLeftovers().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it("comes up healthy: api, nats, redis healthy; the actors and both node agents running", async () => {
    const [nats, https, http] = [await freePort(), await freePort(), await freePort()];
    env = await new DockerComposeEnvironment(ROOT, "docker-compose.yml")
      .withProjectName(project)
      .withClientOptions({ executable: { standalone: true, executablePath: "docker-compose" } })
      .withEnvironment({ CHOREO_COMPOSE_NATS_PORT: String(nats), CHOREO_COMPOSE_HTTPS_PORT: String(https), CHOREO_COMPOSE_HTTP_PORT: String(http) })
      .withWaitStrategy(name("secrets"), Wait.forOneShotStartup())
      .withWaitStrategy(name("nats"), Wait.forHealthCheck())
      .withWaitStrategy(name("redis"), Wait.forHealthCheck())
      .withWaitStrategy(name("api"), Wait.forHealthCheck())
      .withDefaultWaitStrategy(Wait.forListeningPorts())
      .withStartupTimeout(180_000)
      .up();

    const health = await fetch(`http://127.0.0.1:${http}/healthz`);
    assert.equal(health.status, 200);

    // The admin token and the serving certificate live in the api's data volume.
    const api = env.getContainer(name("api"));
    const token = (await api.exec(["sh", "-c", "grep -v '^#' /data/tokens | head -n 1"])).output.trim();
    const ca = (await api.exec(["cat", "/data/pki/apiserver.crt"])).output;
    assert.match(token, /^\S{16,}$/);
    assert.match(ca, /BEGIN CERTIFICATE/);
    writeFileSync(
      kubeconfig,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        "- name: compose",
        "  cluster:",
        `    server: https://127.0.0.1:${https}`,
        `    certificate-authority-data: ${Buffer.from(ca).toString("base64")}`,
        "users:",
        "- name: admin",
        "  user:",
        `    token: ${token}`,
        "contexts:",
        "- name: compose",
        "  context: {cluster: compose, user: admin, namespace: default}",
        "current-context: compose",
        "",
      ].join("\n"),
    );

    // NATS requires TLS with its own CA's certificate: a client that does not trust that CA is refused before it
    // could log in; one that does, without a password, is refused at CONNECT. A plain CONNECT gets no PONG.
    const natsCa = path.join(dir, "nats-ca.crt");
    writeFileSync(natsCa, (await api.exec(["cat", "/run/choreo/identity/nats-ca.crt"])).output);
    await assert.rejects(connect({ servers: `nats://127.0.0.1:${nats}`, maxReconnectAttempts: 0 }), /certificate/i);
    await assert.rejects(connect({ servers: `nats://127.0.0.1:${nats}`, tls: { caFile: natsCa }, maxReconnectAttempts: 0 }), /Authorization Violation/);
    const plain = net.connect({ host: "127.0.0.1", port: nats });
    let said = "";
    plain.on("data", (b: Buffer) => (said += b.toString()));
    plain.on("error", () => undefined);
    await once(plain, "connect");
    plain.write('CONNECT {"verbose":false,"pedantic":false,"protocol":1}\r\nPING\r\n');
    await once(plain, "close");
    assert.match(said, /"tls_required":true/);
    assert.doesNotMatch(said, /PONG/);
    // Redis publishes no port and answers NOAUTH without the api's credentials; the credentials are 0600 where the services read them.
    const redis = env.getContainer(name("redis"));
    assert.match((await redis.exec(["redis-cli", "ping"])).output, /NOAUTH/);
    assert.match((await redis.exec(["redis-cli", "-h", "127.0.0.1", "acl", "whoami"])).output, /NOAUTH/);
    const { stdout: ports } = await exec("docker", ["port", name("redis")]);
    assert.equal(ports.trim(), "", "redis publishes no port");
    assert.equal((await api.exec(["stat", "-c", "%a", "/run/choreo/identity/nats", "/run/choreo/redis/credentials"])).output.trim(), "600\n600");
    assert.equal((await redis.exec(["stat", "-c", "%a", "/etc/redis/redis.conf"])).output.trim(), "600");
    const scheduler = env.getContainer(name("scheduler"));
    assert.match((await scheduler.exec(["sh", "-c", "ls /run/choreo/redis 2>&1 || true"])).output, /No such file/, "only the api gets Redis's credentials");

    // Each actor holds its own token and NATS password and no other's: its container mounts its own identity volume
    // alone, and another actor's token is nowhere in it. (The node agents hold the Docker socket: not a boundary.)
    const secretVolumes = /_(id-[a-z0-9-]+|identities|nats-auth|redis-auth|event-signing)$/;
    for (const s of ["api", "scheduler", "replication", "endpoints", "node-1", "node-2"]) {
      const { stdout } = await exec("docker", ["inspect", "--format", "{{range .Mounts}}{{.Name}} {{end}}", name(s)]);
      const held = stdout
        .trim()
        .split(/\s+/)
        .map((v) => secretVolumes.exec(v)?.[1])
        .filter(Boolean)
        .sort();
      const own = `id-${s}`;
      assert.deepEqual(held, s === "api" ? ["event-signing", own, "redis-auth"].sort() : [own], `${s} mounts ${stdout.trim()}`);
    }
    const tokenOf = async (s: string): Promise<string> => (await env!.getContainer(name(s)).exec(["cat", "/run/choreo/identity/token"])).output.trim();
    const [schedulerToken, replicationToken] = [await tokenOf("scheduler"), await tokenOf("replication")];
    assert.match(replicationToken, /^\S{16,}$/);
    assert.match(schedulerToken, /^\S{16,}$/);
    assert.notEqual(schedulerToken, replicationToken);
    assert.deepEqual((await scheduler.exec(["ls", "/run/choreo"])).output.trim().split(/\s+/), ["identity"]);
    assert.deepEqual((await scheduler.exec(["ls", "/run/choreo/identity"])).output.trim().split(/\s+/), ["nats", "nats-ca.crt", "token"]);
    // One exec for both greps, its output ending in a marker: an exec whose output the engine did not hand back
    // (seen once in CI under load: empty) is asked again, never taken for "not found".
    const greps = await waitFor(
      async () => {
        const out = (
          await scheduler.exec([
            "sh",
            "-c",
            // -e: a base64url token may start with "-", which grep would take for an option (and find nothing).
            `grep -rlsF -e "${replicationToken}" /run /etc /tmp 2>/dev/null; echo ---; grep -rlsF -e "${schedulerToken}" /run 2>/dev/null; echo END`,
          ])
        ).output;
        return out.includes("---") && out.trim().endsWith("END") ? out : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500, message: "the scheduler container's greps answered" },
    );
    const [other, own] = greps.split("---");
    assert.equal(other?.trim(), "", `the replication actor's token is in the scheduler's container: ${other}`);
    assert.match(own ?? "", /identity\/token/, "the control: its own token is found");

    for (const s of ["scheduler", "replication", "endpoints", "node-1", "node-2"]) {
      const { stdout } = await exec("docker", ["inspect", "--format", "{{.State.Status}}", name(s)]);
      assert.equal(stdout.trim(), "running", `${s} is ${stdout.trim()}`);
    }
  });

  it("kubectl and choreo show the two node agents' nodes Ready", async (t) => {
    if (!env) return t.skip("the cluster did not come up");
    const nodes = await waitFor(
      async () => {
        const r = await run("kubectl", ["get", "nodes", "--no-headers"], kubeconfig);
        const ready = r.stdout.split("\n").filter((l) => /^compose-node-[12]\s+Ready\s/.test(l));
        return ready.length === 2 ? r.stdout : undefined;
      },
      { timeoutMs: 120_000, message: "compose-node-1 and compose-node-2 Ready in kubectl get nodes" },
    );
    assert.equal(nodes.trim().split("\n").length, 2, nodes);
    const pod = await run("kubectl", ["get", "nodes", "compose-node-1", "-o", "jsonpath={.spec.podCIDR}"], kubeconfig);
    assert.equal(pod.stdout.trim(), "10.244.101.0/24");
    const viaChoreo = await run(process.execPath, [CHOREO, "get", "nodes"], kubeconfig);
    assert.equal(viaChoreo.code, 0, viaChoreo.stderr);
    assert.match(viaChoreo.stdout, /^compose-node-1\s+Ready/m);
    assert.match(viaChoreo.stdout, /^compose-node-2\s+Ready/m);
  });

  it("runs a pod as a container of the host's engine, with a pod IP from its node's CIDR", async (t) => {
    if (!env) return t.skip("the cluster did not come up");
    const file = path.join(dir, "pod.yaml");
    writeFileSync(
      file,
      [
        "apiVersion: v1",
        "kind: Pod",
        "metadata: {name: compose-hello}",
        "spec:",
        "  terminationGracePeriodSeconds: 1",
        "  containers:",
        "  - {name: hello, image: local/busybox:1.35, imagePullPolicy: IfNotPresent, command: [sh, -c, 'echo hello from compose; exec sleep 3600']}",
        "",
      ].join("\n"),
    );
    const applied = await run("kubectl", ["apply", "-f", file], kubeconfig);
    assert.equal(applied.code, 0, applied.stderr);
    const line = await waitFor(
      async () => {
        const r = await run("kubectl", ["get", "pod", "compose-hello", "-o", "wide", "--no-headers"], kubeconfig);
        return /\s1\/1\s+Running\s/.test(r.stdout) ? r.stdout : undefined;
      },
      { timeoutMs: 120_000, message: "compose-hello Running" },
    );
    assert.match(line, /\s10\.244\.10[12]\.\d+\s+compose-node-[12]\s/, line);
    const containers = await dockerLines(["ps", "-q", "--filter", "label=dev.choreo.pod.name=compose-hello"]);
    assert.ok(containers.length >= 1, "the pod's containers run on the host's engine");
    const deleted = await run("kubectl", ["delete", "pod", "compose-hello", "--wait=true"], kubeconfig);
    assert.equal(deleted.code, 0, deleted.stderr);
    await waitFor(async () => (await dockerLines(["ps", "-aq", "--filter", "label=dev.choreo.pod.name=compose-hello"])).length === 0, {
      timeoutMs: 60_000,
      message: "the pod's containers removed",
    });
  });

  it("a pod cannot reach the Redis and NATS containers on the compose network; it still reaches its node's DNS", async (t) => {
    if (!env) return t.skip("the cluster did not come up");
    const ipOf = async (service: string): Promise<string> =>
      (await dockerLines(["inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", `${project}_${service}_1`]))[0]!.trim().split(" ")[0]!;
    const [redisIp, natsIp] = [await ipOf("redis"), await ipOf("nats")];
    assert.match(redisIp, /^\d+\.\d+\.\d+\.\d+$/);
    // The control: the node's DNS responder (the pod's nameserver, on its bridge) answers on TCP 53, so a CLOSED below is the network's doing, not nc's.
    const probe = (label: string, target: string): string =>
      `if nc -w 3 ${target} </dev/null >/dev/null 2>&1; then echo "${label} OPEN"; else echo "${label} CLOSED"; fi`;
    const script = [
      `ns=$(awk '/^nameserver/{print $2; exit}' /etc/resolv.conf)`,
      probe("dns", "$ns 53"),
      probe("redis", `${redisIp} 6379`),
      probe("nats", `${natsIp} 4222`),
      probe("nats-monitor", `${natsIp} 8222`),
      "echo done; exec sleep 3600",
    ].join("; ");
    const file = path.join(dir, "prober.yaml");
    writeFileSync(
      file,
      [
        "apiVersion: v1",
        "kind: Pod",
        "metadata: {name: compose-prober}",
        "spec:",
        "  terminationGracePeriodSeconds: 1",
        "  containers:",
        `  - {name: probe, image: local/busybox:1.35, imagePullPolicy: IfNotPresent, command: [sh, -c, ${JSON.stringify(script)}]}`,
        "",
      ].join("\n"),
    );
    const applied = await run("kubectl", ["apply", "-f", file], kubeconfig);
    assert.equal(applied.code, 0, applied.stderr);
    const out = await waitFor(
      async () => {
        const r = await run("kubectl", ["logs", "compose-prober"], kubeconfig);
        return /^done$/m.test(r.stdout) ? r.stdout : undefined;
      },
      { timeoutMs: 120_000, message: "the prober pod's verdicts" },
    );
    assert.match(out, /^dns OPEN$/m, out);
    assert.match(out, /^redis CLOSED$/m, out);
    assert.match(out, /^nats CLOSED$/m, out);
    assert.match(out, /^nats-monitor CLOSED$/m, out);
    await run("kubectl", ["delete", "pod", "compose-prober", "--wait=true"], kubeconfig);
  });

  it("down (with volumes) leaves no containers, networks or volumes of the project", async (t) => {
    if (!env) return t.skip("the cluster did not come up");
    await env.down({ removeVolumes: true, timeout: 30_000 });
    env = undefined;
    const label = `label=com.docker.compose.project=${project}`;
    assert.deepEqual(await dockerLines(["ps", "-aq", "--filter", label]), [], "containers");
    assert.deepEqual(await dockerLines(["network", "ls", "-q", "--filter", label]), [], "networks");
    assert.deepEqual(await dockerLines(["volume", "ls", "-q", "--filter", label]), [], "volumes");
    // The agents stopped their pods on the way out (CHOREO_STOP_PODS_ON_EXIT).
    for (const n of NODES) assert.deepEqual(await dockerLines(["ps", "-aq", "--filter", `label=dev.choreo.node=${n}`]), [], `${n}'s pods`);
    await removeNodeLeftovers();
  });
});
