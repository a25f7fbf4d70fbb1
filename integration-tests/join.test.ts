// test-tier: servers
// `choreo join` against a real cluster (nats-server, redis-server, the api):
// `choreo token create` makes a bootstrap token; `choreo join` (its own
// process, a hollow node agent as a second machine's would be) checks the
// api's CA hash, gets its client certificate through a CertificateSigningRequest
// (auto-approved and signed by the api; `kubectl get csr` lists it
// Approved,Issued), exchanges the token for the node's bus credential and runs
// its agent; the Node becomes Ready as system:node:<name> — the node authorizer
// applies to it (it cannot write another Node) — and a pod runs on it. A wrong
// token, an expired one, a deleted one and a wrong --ca-hash are refused with
// clear errors and change nothing (no Node, the api's token file and the NATS
// users and the CSRs as they were); the bootstrap token itself may do nothing else.
import assert from "node:assert/strict";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { ApiError, unwrap } from "@choreo/kit";
import { serveNatsUsers } from "@choreo/kit/bus";
import { ApiClient } from "@choreo/kit/client";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { readTokenFile } from "@choreo/kit/secrets";
import { waitFor } from "@choreo/kit/testing";
import { ROOT, startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

const CHOREO = path.join(ROOT, "services/cli/bin/choreo.js");

function choreo(args: string[], kubeconfig: string) {
  return run(process.execPath, [CHOREO, ...args], kubeconfig);
}

async function outcome(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof ApiError) return err.code;
    throw err;
  }
}

describe("choreo join: a bootstrap token exchanged for a node credential", () => {
  let c: TestCluster;
  let kubeconfig: string;
  let caHash: string;
  let work: string;
  const users = new AbortController();
  const joins: ChildProcess[] = [];
  /** The bootstrap token joined-1 joined with. */
  let firstToken = "";

  /** `choreo join` as its own process: resolves with its exit code and output once it exits, or once `ready` appears. */
  function startJoin(args: string[], node: string): { child: ChildProcess; done: Promise<{ code: number | null; output: string }>; output: () => string } {
    const dataDir = path.join(work, node);
    const child = spawn(
      process.execPath,
      [CHOREO, "join", "--node-name", node, "--runtime", "hollow", "--data-dir", dataDir, "--state-dir", path.join(work, "state"), ...args],
      { cwd: ROOT, env: { ...process.env, CHOREO_LOG_LEVEL: "info" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    joins.push(child);
    let output = "";
    child.stdout?.on("data", (b: Buffer) => (output += b.toString()));
    child.stderr?.on("data", (b: Buffer) => (output += b.toString()));
    const done = new Promise<{ code: number | null; output: string }>((resolve) => child.on("exit", (code) => resolve({ code, output })));
    return { child, done, output: () => output };
  }

  /** What a refused join must leave as it was. */
  const snapshot = async () => ({
    tokens: readFileSync(path.join(c.dir, "api", "tokens"), "utf8"),
    nats: readFileSync(path.join(c.dir, "nats", "nats.conf"), "utf8"),
    csrs: (await c.client.list("certificatesigningrequests")).items.map((o) => unwrap(o).metadata?.name).sort(),
    nodes: (await c.client.list("nodes")).items.map((o) => unwrap(o).metadata?.name).sort(),
  });

  before(async () => {
    c = await startCluster();
    kubeconfig = writeKubeconfig(c);
    // The hash as kubeadm's documentation computes it, by openssl (not by choreo's own code).
    const pub = execFileSync("openssl", ["x509", "-pubkey", "-noout", "-in", path.join(c.dir, "api", "pki", "apiserver.crt")]);
    const der = execFileSync("openssl", ["pkey", "-pubin", "-outform", "der"], { input: pub });
    caHash = `sha256:${execFileSync("sha256sum", { input: der }).toString().split(" ")[0]}`;
    work = mkdtempSync(path.join(os.tmpdir(), "choreo-join-"));
    // What choreo up does for joining nodes: it owns nats-server's users (here the harness does).
    serveNatsUsers(c.nc, c.nats, users.signal);
  });

  after(async () => {
    users.abort();
    for (const j of joins) if (j.exitCode === null) j.kill("SIGTERM");
    await Promise.all(joins.map((j) => (j.exitCode === null ? new Promise((r) => j.once("exit", r)) : undefined)));
    await c?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it("token create/list → join → the Node is Ready as system:node:<name>, a pod runs on it, and it cannot write another Node", () =>
    withLogsOnFailure(c, async () => {
      const created = await choreo(["token", "create", "--ttl", "1h", "--description", "join test"], kubeconfig);
      assert.equal(created.code, 0, created.stderr);
      const token = created.stdout.trim();
      firstToken = token;
      assert.match(token, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
      const listed = await choreo(["token", "list"], kubeconfig);
      assert.match(
        listed.stdout,
        new RegExp(`${token.replace(".", "\\.")}\\s+(59m|1h)\\s+\\S+\\s+authentication,signing\\s+join test\\s+system:bootstrappers:choreo:default-node-token`),
      );
      // kubeadm's --print-join-command: the server and CA hash from the kubeconfig.
      const printed = await choreo(["token", "create", "--ttl", "10m", "--print-join-command"], kubeconfig);
      assert.match(
        printed.stdout.trim(),
        new RegExp(`^choreo join --server ${c.httpsUrl} --token [a-z0-9]{6}\\.[a-z0-9]{16} --ca-hash ${caHash}$`),
        printed.stderr,
      );
      // The Secret is a Kubernetes bootstrap token, as kubectl sees it.
      const secret = await run("kubectl", ["-n", "kube-system", "get", "secret", `bootstrap-token-${token.slice(0, 6)}`, "-o", "jsonpath={.type}"], kubeconfig);
      assert.equal(secret.stdout, "bootstrap.kubernetes.io/token", secret.stderr);

      // The bootstrap token alone reads nothing.
      const asBootstrapper = new ApiClient(c.nc, { token, timeoutMs: 5_000 });
      assert.equal(await outcome(asBootstrapper.list("pods", { namespace: "default" })), 403);

      const j = startJoin(["--server", c.httpsUrl, "--token", token, "--ca-hash", caHash], "joined-1");
      await waitFor(
        async () => {
          try {
            const n = unwrap(await c.client.get("nodes", "", "joined-1")) as Node;
            return n.status?.conditions.some((x) => x.type === "Ready" && x.status === "True") ?? false;
          } catch {
            return false;
          }
        },
        { timeoutMs: 60_000, message: "joined-1 Ready" },
      ).catch((err: Error) => {
        throw new Error(`${err.message}; choreo join said:\n${j.output()}`);
      });
      // Its credential: 0600 files, a token the api knows as system:node:joined-1.
      const dataDir = path.join(work, "joined-1");
      for (const f of ["kubeconfig", "token", "nats.credentials", "event-signing.pub"]) assert.equal(statSync(path.join(dataDir, f)).mode & 0o777, 0o600, f);
      const nodeToken = readTokenFile(path.join(dataDir, "token"));
      const whoami = await run(
        "kubectl",
        ["auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"],
        path.join(dataDir, "kubeconfig"),
      );
      assert.match(whoami.stdout, /^system:node:joined-1 \["system:nodes","system:authenticated"\]/, whoami.stderr);

      // Its https identity came the Kubernetes way: a CSR asked by the bootstrap token, auto-approved and signed.
      const csrs = await run("kubectl", ["get", "csr"], kubeconfig);
      assert.match(
        csrs.stdout,
        new RegExp(
          `node-csr-\\S+\\s+\\S+\\s+kubernetes.io/kube-apiserver-client-kubelet\\s+system:bootstrap:${token.slice(0, 6)}\\s+<none>\\s+Approved,Issued`,
        ),
        csrs.stdout,
      );
      assert.match(readFileSync(path.join(dataDir, "kubeconfig"), "utf8"), /client-certificate-data: /);

      // The node authorizer: its own Node yes, another's no.
      await c.client.create(fromKubeJson({ apiVersion: "v1", kind: "Node", metadata: { name: "someone-else" } }));
      const asNode = new ApiClient(c.nc, { token: nodeToken, timeoutMs: 5_000 });
      const MERGE = "application/merge-patch+json";
      assert.equal(await outcome(asNode.patch("nodes", "", "joined-1", MERGE, { metadata: { annotations: { "test/mine": "yes" } } })), 200);
      assert.equal(await outcome(asNode.patch("nodes", "", "someone-else", MERGE, { metadata: { annotations: { "test/mine": "no" } } })), 403);
      assert.equal(unwrap(await c.client.get("nodes", "", "someone-else")).metadata?.annotations?.["test/mine"], undefined);

      // A pod bound to it runs (the hollow runtime reports it Running).
      await c.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "on-joined", namespace: "default" },
          spec: { nodeName: "joined-1", containers: [{ name: "app", image: "local/busybox:1.35" }] },
        }),
      );
      await waitFor(async () => (unwrap(await c.client.get("pods", "default", "on-joined")) as Pod).status?.phase === "Running", {
        timeoutMs: 60_000,
        message: "the pod on joined-1 Running",
      });
    }));

  it("survives kill -9: choreo join restarts its agent; started again it resumes with its kept credential (its token deleted); after the api's kill -9 another node joins", () =>
    withLogsOnFailure(c, async () => {
      const pidFile = path.join(work, "joined-1", "pids", "joined-1");
      const first = Number(readFileSync(pidFile, "utf8").split(" ")[0]);
      process.kill(first, "SIGKILL");
      await waitFor(
        () => {
          const now = Number(readFileSync(pidFile, "utf8").split(" ")[0]);
          return now !== first && now > 0;
        },
        { timeoutMs: 60_000, message: "the agent restarted by choreo join" },
      );
      // The restarted agent renews its Lease with the same credential: the Node stays (or is again) Ready.
      const leaseAt = async () => unwrap(await c.client.get("leases", "kube-node-lease", "joined-1")).metadata?.resourceVersion;
      const seen = await leaseAt();
      await waitFor(async () => (await leaseAt()) !== seen, { timeoutMs: 60_000, message: "joined-1's Lease renewed by the restarted agent" });

      // choreo join stopped and started again on the same data dir (a reboot): the kept credential, no token — its token deleted meanwhile.
      assert.equal((await choreo(["token", "delete", firstToken], kubeconfig)).code, 0);
      const running = joins[0]!;
      running.kill("SIGTERM");
      await new Promise((r) => (running.exitCode === null ? running.once("exit", r) : r(undefined)));
      const again = startJoin([], "joined-1");
      await waitFor(async () => again.output().includes("rejoins"), { timeoutMs: 60_000, message: "choreo join resumed" }).catch((err: Error) => {
        throw new Error(`${err.message}; choreo join said:\n${again.output()}`);
      });
      const stopped = await leaseAt();
      await waitFor(async () => (await leaseAt()) !== stopped, { timeoutMs: 60_000, message: "joined-1's Lease renewed after the rejoin" });

      await c.killApi(0);
      await c.startApi(0);
      const token = (await choreo(["token", "create", "--ttl", "10m"], kubeconfig)).stdout.trim();
      const j = startJoin(["--server", c.httpsUrl, "--token", token, "--ca-hash", caHash], "joined-2");
      await waitFor(
        async () => {
          try {
            const n = unwrap(await c.client.get("nodes", "", "joined-2")) as Node;
            return n.status?.conditions.some((x) => x.type === "Ready" && x.status === "True") ?? false;
          } catch {
            return false;
          }
        },
        { timeoutMs: 60_000, message: "joined-2 Ready" },
      ).catch((err: Error) => {
        throw new Error(`${err.message}; choreo join said:\n${j.output()}`);
      });
    }));

  it("a wrong, expired or deleted token and a wrong --ca-hash are refused with clear errors and change nothing", () =>
    withLogsOnFailure(c, async () => {
      const before = await snapshot();
      const bad = async (args: string[], node: string, expect: RegExp) => {
        const { code, output } = await startJoin(args, node).done;
        assert.notEqual(code, 0, output);
        assert.match(output, expect);
      };
      const good = (await choreo(["token", "create", "--ttl", "1h"], kubeconfig)).stdout.trim();
      const mid = await snapshot();
      // A wrong secret of a real id, an unknown id, a malformed token.
      await bad(["--server", c.httpsUrl, "--token", `${good.slice(0, 7)}0000000000000000`, "--ca-hash", caHash], "bad-1", /refused the bootstrap token/);
      await bad(["--server", c.httpsUrl, "--token", "zzzzzz.0000000000000000", "--ca-hash", caHash], "bad-2", /refused the bootstrap token/);
      await bad(["--server", c.httpsUrl, "--token", "not-a-token", "--ca-hash", caHash], "bad-3", /must be a bootstrap token/);
      // A wrong CA hash: the token is never sent.
      await bad(
        ["--server", c.httpsUrl, "--token", good, "--ca-hash", `sha256:${"0".repeat(64)}`],
        "bad-4",
        /presents the CA sha256:[0-9a-f]{64}, not --ca-hash/,
      );
      // An expired token (its Secret written by hand, expired a second ago).
      const expiredId = "exp123";
      await c.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: `bootstrap-token-${expiredId}`, namespace: "kube-system" },
          type: "bootstrap.kubernetes.io/token",
          stringData: {
            "token-id": expiredId,
            "token-secret": "0123456789abcdef",
            "usage-bootstrap-authentication": "true",
            expiration: new Date(Date.now() - 1_000).toISOString(),
          },
        }),
      );
      await bad(["--server", c.httpsUrl, "--token", `${expiredId}.0123456789abcdef`, "--ca-hash", caHash], "bad-5", /refused the bootstrap token/);
      // A deleted token.
      const deleted = await choreo(["token", "delete", good.slice(0, 6)], kubeconfig);
      assert.equal(deleted.code, 0, deleted.stderr);
      await bad(["--server", c.httpsUrl, "--token", good, "--ca-hash", caHash], "bad-6", /refused the bootstrap token/);
      const after = await snapshot();
      assert.deepEqual(after, { ...mid, nodes: before.nodes });
      assert.equal(after.tokens, before.tokens);
      // The tokencleaner removes the expired token's Secret (it sweeps every 10 s).
      await waitFor(async () => !(await choreo(["token", "list"], kubeconfig)).stdout.includes(expiredId), {
        timeoutMs: 40_000,
        message: "the expired token's Secret deleted",
      });
    }));
});
