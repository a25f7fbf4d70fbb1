// test-tier: servers
// Node credentials across api replicas: two replicas share nats-server and
// redis-server but not their token files (replica 1 is started again on a
// token file of its own, as a replica on another machine would be). A node
// credential exchanged through replica 1's https for a bootstrap token (the
// POST /choreo/v1/nodecredential of `choreo join`) is at once
// system:node:<n> on replica 0's https (kubectl 1.32 --token) and over the
// NATS api with replica 1 killed; it may not read its own credential
// Secret; no token file is written. A re-join through replica 0 makes the
// old token 401 on both replicas and over NATS; after a kill -9 of replica 0
// and its restart the new token still works there; deleting the node's
// credential Secret revokes it on both. A token-file line of a node joined
// before (migration) keeps working until that node joins again — then only
// the new token does, even on the replica whose file still has the line.
import assert from "node:assert/strict";
import { copyFileSync, readFileSync, appendFileSync } from "node:fs";
import https from "node:https";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { ApiError } from "@choreo/kit";
import { serveNatsUsers } from "@choreo/kit/bus";
import { ApiClient } from "@choreo/kit/client";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

const KUBECTL = "/usr/bin/kubectl";
const NODE = "ha-node";
const BOOTSTRAP = "hatest.0123456789abcdef";

describe("node credentials shared by api replicas", () => {
  let c: TestCluster;
  let kubeconfig: string;
  let ca: string;
  const tokenFiles: string[] = [];
  const users = new AbortController();

  /** The node credential exchange on replica `i`'s https, as `choreo join` does it. */
  function exchange(i: number, nodeName: string): Promise<{ status: number; body: { token?: string; user?: string } }> {
    const body = JSON.stringify({ nodeName });
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          host: "127.0.0.1",
          port: c.apis[i]!.httpsPort,
          path: "/choreo/v1/nodecredential",
          method: "POST",
          ca,
          headers: { Authorization: `Bearer ${BOOTSTRAP}`, "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) },
        },
        (res) => {
          let text = "";
          res.on("data", (b: Buffer) => (text += b.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as { token?: string } }));
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  }

  /** `kubectl auth whoami` on replica `i`'s https with `token`: the user, or "" when refused (with kubectl's words). */
  async function whoami(i: number, token: string): Promise<{ user: string; stderr: string }> {
    const r = await run(
      KUBECTL,
      ["--server", `https://127.0.0.1:${c.apis[i]!.httpsPort}`, "--token", token, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"],
      kubeconfig,
    );
    return { user: r.code === 0 ? r.stdout : "", stderr: r.stderr };
  }

  const kubectlAs = (i: number, token: string, args: string[]) =>
    run(KUBECTL, ["--server", `https://127.0.0.1:${c.apis[i]!.httpsPort}`, "--token", token, ...args], kubeconfig);

  /** The status of a NATS api request with `token` (whichever replica answers). */
  async function overNats(token: string): Promise<number> {
    try {
      await new ApiClient(c.nc, { token, timeoutMs: 5_000 }).get("nodes", "", NODE);
      return 200;
    } catch (err) {
      if (err instanceof ApiError) return err.code;
      throw err;
    }
  }

  const files = () => tokenFiles.map((f) => readFileSync(f, "utf8"));

  before(async () => {
    c = await startCluster({ apis: 2 });
    kubeconfig = writeKubeconfig(c);
    ca = readFileSync(path.join(c.dir, "api", "pki", "apiserver.crt"), "utf8");
    // Replica 1 on a token file of its own (the administrator's line only): what replica 0 writes there, it cannot see.
    const own = path.join(c.dir, "api-1-tokens");
    copyFileSync(path.join(c.dir, "api", "tokens"), own);
    await c.killApi(1);
    await c.startApi(1, { CHOREO_TOKEN_FILE: own });
    tokenFiles.push(path.join(c.dir, "api", "tokens"), own);
    // What choreo up does for joining nodes: it owns nats-server's users (here the harness does).
    serveNatsUsers(c.nc, c.nats, users.signal);
    await c.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: `bootstrap-token-${BOOTSTRAP.slice(0, 6)}`, namespace: "kube-system" },
        type: "bootstrap.kubernetes.io/token",
        stringData: {
          "token-id": BOOTSTRAP.slice(0, 6),
          "token-secret": BOOTSTRAP.slice(7),
          "usage-bootstrap-authentication": "true",
          expiration: new Date(Date.now() + 3_600_000).toISOString(),
        },
      }),
    );
    await c.client.create(fromKubeJson({ apiVersion: "v1", kind: "Node", metadata: { name: NODE } }));
  });
  after(async () => {
    users.abort();
    await c?.stop();
  });

  it("joined through one replica, known to the other over https and NATS; re-join revokes the old token on both; kill -9 and restart keep it; deleting the Secret revokes it", () =>
    withLogsOnFailure(c, async () => {
      const before = files();
      const joined = await exchange(1, NODE);
      assert.equal(joined.status, 201, JSON.stringify(joined.body));
      const t1 = joined.body.token ?? "";
      assert.match(t1, /^choreo-node\.ha-node\.[A-Za-z0-9_-]{43}$/);
      // No token file written: the credential is a Secret (as the administrator sees it), its digest only.
      assert.deepEqual(files(), before);
      const sec = await run(KUBECTL, ["-n", "kube-system", "get", "secret", `node-credential-${NODE}`, "-o", "jsonpath={.type} {.data.user}"], kubeconfig);
      assert.equal(sec.stdout, `choreo.dev/node-credential ${Buffer.from(`system:node:${NODE}`).toString("base64")}`, sec.stderr);

      // At once on the other replica's https (its watch, or the store when the watch has not brought it yet).
      assert.deepEqual(await whoami(0, t1), { user: `system:node:${NODE}`, stderr: "" });
      const got = await kubectlAs(0, t1, ["get", "node", NODE, "-o", "name"]);
      assert.equal(got.stdout.trim(), `node/${NODE}`, got.stderr);
      // Its own credential Secret is not the node's to read, on either replica; nor the bootstrapper's, nor may they list Secrets.
      for (const i of [0, 1])
        for (const [who, token] of [
          ["node", t1],
          ["bootstrapper", BOOTSTRAP],
        ])
          for (const args of [
            ["get", "secret", `node-credential-${NODE}`],
            ["get", "secrets"],
          ]) {
            const r = await kubectlAs(i, token, ["-n", "kube-system", ...args]);
            assert.notEqual(r.code, 0, `${who} ${args.join(" ")} on replica ${i}: ${r.stdout}`);
            assert.match(r.stderr, /is forbidden: User "system:(node:ha-node|bootstrap:hatest)"/, r.stderr);
          }
      // Over NATS with only replica 0 answering (replica 1, which issued it, killed): 200; a wrong token 401.
      await c.killApi(1);
      assert.equal(await overNats(t1), 200);
      assert.equal(await overNats(`${t1.slice(0, -2)}xx`), 401);
      await c.startApi(1, { CHOREO_TOKEN_FILE: tokenFiles[1]! });

      // A re-join through replica 0: the old token refused by both replicas and over NATS, the new one good everywhere.
      const again = await exchange(0, NODE);
      assert.equal(again.status, 201, JSON.stringify(again.body));
      const t2 = again.body.token ?? "";
      const rejoinedAt = Date.now();
      for (const i of [0, 1])
        await waitFor(async () => (await whoami(i, t1)).user === "", { timeoutMs: 10_000, message: `the old token refused on replica ${i}` });
      const revokedMs = Date.now() - rejoinedAt;
      const refused = await whoami(1, t1);
      assert.match(refused.stderr, /Unauthorized/);
      assert.equal(await overNats(t1), 401);
      for (const i of [0, 1]) assert.equal((await whoami(i, t2)).user, `system:node:${NODE}`);
      assert.equal(await overNats(t2), 200);

      // kill -9 of replica 1 and its restart (a fresh cache, listed from the store): the new token still works there, the old not.
      await c.killApi(1);
      await c.startApi(1, { CHOREO_TOKEN_FILE: tokenFiles[1]! });
      assert.equal((await whoami(1, t2)).user, `system:node:${NODE}`);
      assert.equal((await whoami(1, t1)).user, "");
      assert.equal(await overNats(t2), 200);

      // Deleting the node's credential Secret revokes its token on both replicas.
      const del = await run(KUBECTL, ["-n", "kube-system", "delete", "secret", `node-credential-${NODE}`], kubeconfig);
      assert.equal(del.code, 0, del.stderr);
      const deletedAt = Date.now();
      for (const i of [0, 1])
        await waitFor(async () => (await whoami(i, t2)).user === "", { timeoutMs: 10_000, message: `the deleted credential refused on replica ${i}` });
      const deletedMs = Date.now() - deletedAt;
      assert.equal(await overNats(t2), 401);
      assert.deepEqual(files(), before);
      console.log(JSON.stringify({ oldTokenRefusedOnBothMs: revokedMs, deletedCredentialRefusedOnBothMs: deletedMs }));
    }));

  it("a token-file line of a node joined before keeps working until the node joins again; then only the new token, on every replica", () =>
    withLogsOnFailure(c, async () => {
      // Replica 1's file holds the line a join through it wrote before credentials were Secrets.
      const legacy = "legacy-token-of-old-node-0123456789";
      appendFileSync(tokenFiles[1]!, `${legacy},system:node:old-node,system:node:old-node,"system:nodes"\n`);
      await waitFor(async () => (await whoami(1, legacy)).user === "system:node:old-node", { timeoutMs: 10_000, message: "the legacy line read" });
      // Joined again through replica 0, which cannot remove a line of replica 1's file: the Secret supersedes it there.
      const again = await exchange(0, "old-node");
      assert.equal(again.status, 201, JSON.stringify(again.body));
      await waitFor(async () => (await whoami(1, legacy)).user === "", { timeoutMs: 10_000, message: "the legacy line superseded on replica 1" });
      assert.ok(readFileSync(tokenFiles[1]!, "utf8").includes(legacy), "the line is still in replica 1's file");
      for (const i of [0, 1]) assert.equal((await whoami(i, again.body.token ?? "")).user, "system:node:old-node");
    }));
});
