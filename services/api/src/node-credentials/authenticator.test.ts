// test-tier: servers
// Node credential tokens on a real stack (nats-server, redis-server, the
// registry with Secrets sealed, its watch): the token form; the cache
// follows credential Secrets created, replaced and deleted through the
// watch and answers from memory (no store read); a token the cache does not
// know yet is read from the store once (a replica whose watch lags the one
// that issued it) and then cached, a refused one at most once per interval;
// a Secret that names another user, another name or no digest is no
// credential; a late store read cannot bring back a deleted Secret; the
// token file's line of a node is superseded once the node has a Secret;
// and neither a node nor a bootstrapper may read the Secrets (RBAC with the
// default policy and the node authorizer).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import type { Secret } from "@choreo/kit/gen/choreo/core/v1/core";
import { startStack, type Stack } from "../testing/stack.js";
import { StaticTokens, parseTokenFile } from "../auth/static-tokens.js";
import { AuthorizerChain } from "../auth/authorize.js";
import { NodeAuthorizer } from "../auth/node/node-authorizer.js";
import { NodeGraph } from "../auth/node/graph.js";
import { RbacAuthorizer } from "../auth/rbac/authorizer.js";
import { StaticSource } from "../auth/rbac/testing.js";
import type { Attributes, UserInfo } from "../auth/types.js";
import { bootstrapClusterRoleBindings, bootstrapClusterRoles } from "../registry/rbac/bootstrap-policy.js";
import { NodeCredentials, supersedingNodeLines, type NodeCredentialRefusal } from "./authenticator.js";
import { credentialSecret, newNodeToken, nodeOfToken, tokenDigest } from "./credential-secret.js";

describe("node credential tokens: the form", () => {
  it("names its node; anything else is another authenticator's", () => {
    const t = newNodeToken("worker-1.example");
    assert.match(t, /^choreo-node\.worker-1\.example\.[A-Za-z0-9_-]{43}$/);
    assert.equal(nodeOfToken(t), "worker-1.example");
    assert.notEqual(newNodeToken("a"), newNodeToken("a"));
    const secret = "A".repeat(43);
    for (const other of [
      "",
      "admintoken",
      "abcdef.0123456789abcdef",
      "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln",
      `choreo-node.${secret}`,
      `choreo-node..${secret}`,
      `choreo-node.Worker.${secret}`,
      `choreo-node.w_1.${secret}`,
      `choreo-node.w1.${secret}x`,
      `choreo-node.w1.${secret.slice(1)}`,
      `choreo-node.w1.${secret.slice(1)}=`,
      `choreo-node.${"x".repeat(238)}.${secret}`,
    ])
      assert.equal(nodeOfToken(other), undefined, other);
  });
});

describe("node credential tokens over a real stack", () => {
  let s: Stack;
  const ac = new AbortController();
  let creds: NodeCredentials;
  let running: Promise<void>;
  const refused: NodeCredentialRefusal[] = [];
  const secretOf = async (node: string) =>
    unwrap(await s.registry.get({ resource: "secrets", namespace: "kube-system", name: `node-credential-${node}` })) as Secret;
  const put = async (node: string, token: string) => {
    try {
      const old = await secretOf(node);
      return unwrap(await s.registry.update({ object: credentialSecret(node, token, old.metadata?.resourceVersion), dryRun: false })) as Secret;
    } catch {
      return unwrap(await s.registry.create({ object: credentialSecret(node, token), dryRun: false })) as Secret;
    }
  };
  const remove = (node: string) => s.registry.delete({ resource: "secrets", namespace: "kube-system", name: `node-credential-${node}` });

  before(async () => {
    s = await startStack();
    creds = new NodeCredentials({ handlers: s.registry, log: silentLogger(), retryMs: 10, onRefused: (_n, why) => refused.push(why) });
    running = creds.start(ac.signal);
    await creds.waitSynced();
  });
  after(async () => {
    ac.abort();
    await running;
    await s.stop();
  });

  it("follows Secrets created, replaced and deleted through the watch, answering from memory", async () => {
    const t1 = newNodeToken("w1");
    await put("w1", t1);
    await waitFor(() => creds.hasCredential("w1"), { timeoutMs: 10_000, message: "w1's Secret watched" });
    const reads = creds.storeReads;
    const u = await creds.authenticateToken(t1);
    assert.deepEqual(u, { name: "system:node:w1", uid: "system:node:w1", groups: ["system:nodes", "system:authenticated"], extra: {} });
    assert.equal(creds.storeReads, reads, "a cached credential is no store read");
    // A re-join: the new token good, the old one refused once the watch brings the change.
    const t2 = newNodeToken("w1");
    await put("w1", t2);
    await waitFor(async () => (await creds.authenticateToken(t1)) === undefined, { timeoutMs: 10_000, message: "the old token refused" });
    assert.equal((await creds.authenticateToken(t2))?.name, "system:node:w1");
    // Another node's token with w1's name in it is no good: the digest decides.
    assert.equal(await creds.authenticateToken(`${t2.slice(0, -1)}${t2.endsWith("A") ? "B" : "A"}`), undefined);
    // Deleting the Secret revokes the token.
    await remove("w1");
    await waitFor(() => !creds.hasCredential("w1"), { timeoutMs: 10_000, message: "w1's Secret deletion watched" });
    assert.equal(await creds.authenticateToken(t2), undefined);
    assert.ok(refused.includes("no-secret") || refused.includes("throttled"), refused.join());
  });

  it("a token its cache does not know yet (a lagging replica) is read from the store once, then cached; a refused one at most once per interval", async () => {
    // A replica that has not watched the write: never started (nothing listed), reading only the store.
    const lagging = new NodeCredentials({ handlers: s.registry, log: silentLogger(), missIntervalMs: 60_000 });
    const t = newNodeToken("w2");
    await put("w2", t);
    assert.equal((await lagging.authenticateToken(t))?.name, "system:node:w2");
    assert.equal(lagging.storeReads, 1);
    assert.equal((await lagging.authenticateToken(t))?.name, "system:node:w2");
    assert.equal(lagging.storeReads, 1, "the store's answer was kept");
    // A wrong token of a node: one store read, then refused without reading until the interval has passed.
    const wrong = newNodeToken("w3");
    await put("w3", newNodeToken("w3"));
    for (let i = 0; i < 5; i++) assert.equal(await lagging.authenticateToken(wrong), undefined);
    assert.equal(lagging.storeReads, 2);
    // An unknown node: NotFound, once.
    for (let i = 0; i < 3; i++) assert.equal(await lagging.authenticateToken(newNodeToken("nobody")), undefined);
    assert.equal(lagging.storeReads, 3);
    // Tokens of other forms are not this authenticator's: no read at all.
    assert.equal(await lagging.authenticateToken("admintoken"), undefined);
    assert.equal(lagging.storeReads, 3);
  });

  it("a Secret naming another user, under another name or without a digest is no credential", async () => {
    const t = newNodeToken("w4");
    const good = { "node-name": "w4", user: "system:node:w4", groups: "system:nodes", "token-sha256": tokenDigest(t).toString("hex") };
    const variants: [string, Record<string, string>, string][] = [
      ["node-credential-w4", { user: "admin" }, "wrong-identity"],
      ["node-credential-w4", { groups: "system:nodes,system:masters" }, "wrong-identity"],
      ["node-credential-w4", { "node-name": "w5" }, "wrong-name"],
      ["node-credential-w4", { "token-sha256": "xyz" }, "bad-digest"],
    ];
    for (const [name, change, why] of variants) {
      await remove("w4").catch(() => undefined);
      await s.registry.create({
        object: fromKubeJson({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name, namespace: "kube-system" },
          type: "choreo.dev/node-credential",
          stringData: { ...good, ...change },
        }),
        dryRun: false,
      });
      const fresh = new NodeCredentials({ handlers: s.registry, log: silentLogger(), onRefused: (_n, w) => refused.push(w) });
      refused.length = 0;
      assert.equal(await fresh.authenticateToken(t), undefined, JSON.stringify(change));
      assert.deepEqual(refused, [why]);
      // And the watching cache does not take it either.
      await waitFor(async () => !creds.hasCredential("w4") && (await secretOf("w4")).metadata?.resourceVersion !== undefined, { timeoutMs: 5_000 });
      assert.equal(await creds.authenticateToken(t), undefined);
    }
    // The same Secret unchanged is one.
    await remove("w4");
    await s.registry.create({
      object: fromKubeJson({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "node-credential-w4", namespace: "kube-system" },
        type: "choreo.dev/node-credential",
        stringData: good,
      }),
      dryRun: false,
    });
    assert.equal((await new NodeCredentials({ handlers: s.registry, log: silentLogger() }).authenticateToken(t))?.name, "system:node:w4");
    await remove("w4");
  });

  it("a late store read cannot bring back a deleted Secret; a relist keeps what was observed after it", async () => {
    const t = newNodeToken("w6");
    const old = await put("w6", t);
    await waitFor(() => creds.hasCredential("w6"), { timeoutMs: 10_000 });
    await remove("w6");
    await waitFor(() => !creds.hasCredential("w6"), { timeoutMs: 10_000 });
    creds.observe(old);
    assert.equal(creds.hasCredential("w6"), false);
    // A write's result observed by this replica before its watch has it stays over a relist from before it.
    const t7 = newNodeToken("w7");
    const written = await put("w7", t7);
    creds.observe(written);
    assert.equal(creds.hasCredential("w7"), true);
    creds.relistNow();
    await waitFor(() => creds.lists >= 2, { timeoutMs: 10_000 });
    assert.equal((await creds.authenticateToken(t7))?.name, "system:node:w7");
  });

  it("the token file's line of a node is superseded once the node has a credential Secret; others' lines are not", async () => {
    const file = new StaticTokens(
      parseTokenFile('admintoken\nold-w8,system:node:w8,system:node:w8,"system:nodes"\nold-w9,system:node:w9,system:node:w9,"system:nodes"\n'),
    );
    const lines = supersedingNodeLines(file, creds);
    assert.equal((await lines.authenticateToken("old-w8"))?.name, "system:node:w8");
    await put("w8", newNodeToken("w8"));
    await waitFor(() => creds.hasCredential("w8"), { timeoutMs: 10_000 });
    assert.equal(await lines.authenticateToken("old-w8"), undefined);
    assert.equal((await lines.authenticateToken("old-w9"))?.name, "system:node:w9");
    assert.equal((await lines.authenticateToken("admintoken"))?.name, "admin");
  });
});

describe("who may read node credential Secrets (the default policy)", () => {
  const chain = new AuthorizerChain([
    new NodeAuthorizer(new NodeGraph()),
    new RbacAuthorizer(new StaticSource([], bootstrapClusterRoles(), [], bootstrapClusterRoleBindings())),
  ]);
  const user = (name: string, ...groups: string[]): UserInfo => ({ name, uid: "", groups: [...groups, "system:authenticated"], extra: {} });
  const secrets = (u: UserInfo, verb: string, name = ""): Attributes => ({
    user: u,
    verb,
    resourceRequest: true,
    apiGroup: "",
    apiVersion: "v1",
    resource: "secrets",
    subresource: "",
    namespace: "kube-system",
    name,
    path: "",
  });

  it("a node (even its own Secret) and a bootstrapper may not get, list or watch them; an administrator may", () => {
    const node = user("system:node:w1", "system:nodes");
    const bootstrapper = user("system:bootstrap:abcdef", "system:bootstrappers", "system:bootstrappers:choreo:default-node-token");
    for (const u of [node, bootstrapper, user("alice")]) {
      for (const [verb, name] of [
        ["get", "node-credential-w1"],
        ["get", "node-credential-w2"],
        ["list", ""],
        ["watch", ""],
        ["update", "node-credential-w1"],
        ["delete", "node-credential-w1"],
      ] as const)
        assert.equal(chain.authorize(secrets(u, verb, name)).allowed, false, `${u.name} ${verb} ${name}`);
    }
    assert.equal(chain.authorize(secrets(user("root", "system:masters"), "get", "node-credential-w1")).allowed, true);
  });
});
