// The exchange's approver over the real registry (MemoryStore) with a fake
// NATS user owner: only bootstrappers get a credential, for a well-formed
// node name, and only when the NATS user exists; the credential is a Secret
// kube-system/node-credential-<name> holding the token's SHA-256 (never the
// token) that the authenticator (a replica that never saw the write: a
// store read) takes as system:node:<name>; the token file is not written;
// a re-join replaces the Secret (the old token refused) and removes a line
// of the node from the token file (a node joined before), other lines kept;
// a refusal changes nothing.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { ApiError, unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import type { Secret } from "@choreo/kit/gen/choreo/core/v1/core";
import { createRegistry } from "../registry/index.js";
import { MemoryStore } from "../storage/memory-store.js";
import type { UserInfo } from "../auth/types.js";
import { NodeCredentials } from "./authenticator.js";
import { NODE_CREDENTIAL_TYPE, tokenDigest } from "./credential-secret.js";
import { NodeCredentialIssuer } from "./issuer.js";

const dir = mkdtempSync(path.join(tmpdir(), "choreo-issuer-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const BOOTSTRAPPER: UserInfo = { name: "system:bootstrap:abcdef", uid: "", groups: ["system:bootstrappers", "system:authenticated"], extra: {} };
const ALICE: UserInfo = { name: "alice", uid: "", groups: ["system:authenticated"], extra: {} };
const TOKEN_FILE = 'admintoken\nsched,system:kube-scheduler,system:kube-scheduler,\nold-w1,system:node:worker-1,system:node:worker-1,"system:nodes"\n';

async function setup(
  natsUser: (node: string) => Promise<{ user: string; password: string }> = (node) => Promise.resolve({ user: `actor-node-${node}`, password: "pw" }),
) {
  const r = createRegistry({ store: new MemoryStore(), serviceCidr: "10.96.0.0/16", log: silentLogger() });
  await r.create({ object: fromKubeJson({ apiVersion: "v1", kind: "Namespace", metadata: { name: "kube-system" } }), dryRun: false });
  const tokenFile = path.join(dir, `tokens-${Math.random().toString(36).slice(2)}`);
  writeFileSync(tokenFile, TOKEN_FILE, { mode: 0o600 });
  const keyFile = path.join(dir, "event-signing.pub");
  writeFileSync(keyFile, "PUBLIC KEY");
  const asked: string[] = [];
  const written: Secret[] = [];
  const issuer = new NodeCredentialIssuer({
    secrets: r,
    onWritten: (s) => written.push(s),
    tokenFile,
    natsUser: (node) => (asked.push(node), natsUser(node)),
    natsUrl: "nats://10.0.0.1:4222",
    eventVerifyKeyFile: keyFile,
    log: silentLogger(),
  });
  // Another replica's authenticator: it never saw the write, so it reads the store (no interval between reads here).
  const authn = () => new NodeCredentials({ handlers: r, log: silentLogger(), missIntervalMs: 0 });
  const secret = async (node: string) => unwrap(await r.get({ resource: "secrets", namespace: "kube-system", name: `node-credential-${node}` })) as Secret;
  const secretNames = async () =>
    (await r.list({ resource: "secrets", namespace: "kube-system", labelSelector: "", fieldSelector: "", limit: 0, continue: "" })).items
      .map((o) => unwrap(o).metadata?.name)
      .sort();
  return { r, issuer, tokenFile, asked, written, authn, secret, secretNames };
}

async function code(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    return err.code;
  }
}

const str = (s: Secret, k: string) => Buffer.from(s.data[k] ?? new Uint8Array()).toString("utf8");

describe("node credential issuer", () => {
  it("issues a bootstrapper the node's token, NATS user and the event key; the token is a Secret's digest, system:node:<name> on any replica; the token file untouched", async () => {
    const s = await setup();
    const cred = await s.issuer.issue(BOOTSTRAPPER, "worker-2.example");
    assert.equal(cred.user, "system:node:worker-2.example");
    assert.match(cred.token, /^choreo-node\.worker-2\.example\.[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(cred.nats, { url: "nats://10.0.0.1:4222", user: "actor-node-worker-2.example", password: "pw" });
    assert.equal(cred.eventVerifyKey, "PUBLIC KEY");
    const sec = await s.secret("worker-2.example");
    assert.equal(sec.type, NODE_CREDENTIAL_TYPE);
    assert.deepEqual(Object.keys(sec.data).sort(), ["groups", "node-name", "token-sha256", "user"]);
    assert.equal(str(sec, "user"), "system:node:worker-2.example");
    assert.equal(str(sec, "groups"), "system:nodes");
    assert.equal(str(sec, "token-sha256"), tokenDigest(cred.token).toString("hex"));
    // The token itself is nowhere in the Secret.
    assert.ok(!JSON.stringify(sec).includes(cred.token.split(".").pop()!));
    assert.equal(s.written[0]?.metadata?.resourceVersion, sec.metadata?.resourceVersion);
    const u = await s.authn().authenticateToken(cred.token);
    assert.equal(u?.name, "system:node:worker-2.example");
    assert.deepEqual(u?.groups, ["system:nodes", "system:authenticated"]);
    assert.equal(readFileSync(s.tokenFile, "utf8"), TOKEN_FILE);
  });

  it("a re-join replaces the Secret (the old token refused) and removes the node's line of the token file, the others kept", async () => {
    const s = await setup();
    const first = await s.issuer.issue(BOOTSTRAPPER, "worker-1");
    // The node's line of before (joined when tokens were lines) is gone with its first join as a Secret.
    assert.equal(readFileSync(s.tokenFile, "utf8"), "admintoken\nsched,system:kube-scheduler,system:kube-scheduler,\n");
    const rv1 = (await s.secret("worker-1")).metadata?.resourceVersion;
    const second = await s.issuer.issue(BOOTSTRAPPER, "worker-1");
    const sec = await s.secret("worker-1");
    assert.notEqual(sec.metadata?.resourceVersion, rv1);
    assert.equal(str(sec, "token-sha256"), tokenDigest(second.token).toString("hex"));
    const a = s.authn();
    assert.equal(await a.authenticateToken(first.token), undefined);
    assert.equal((await a.authenticateToken(second.token))?.name, "system:node:worker-1");
    assert.deepEqual(await s.secretNames(), ["node-credential-worker-1"]);
    assert.equal(readFileSync(s.tokenFile, "utf8"), "admintoken\nsched,system:kube-scheduler,system:kube-scheduler,\n");
  });

  it("replaces a Secret of the name of another type (the type is immutable): deleted, then created", async () => {
    const s = await setup();
    await s.r.create({
      object: fromKubeJson({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "node-credential-worker-3", namespace: "kube-system" },
        stringData: { x: "y" },
      }),
      dryRun: false,
    });
    const cred = await s.issuer.issue(BOOTSTRAPPER, "worker-3");
    assert.equal((await s.secret("worker-3")).type, NODE_CREDENTIAL_TYPE);
    assert.equal((await s.authn().authenticateToken(cred.token))?.name, "system:node:worker-3");
  });

  it("refuses anyone but a bootstrapper (403), a bad node name (400), a cluster without a NATS user owner (503) — no Secret, the token file unchanged", async () => {
    const s = await setup();
    assert.equal(await code(s.issuer.issue(ALICE, "worker-1")), 403);
    for (const bad of ["", "Worker", "-x", "a_b", "x".repeat(254), "x".repeat(238), 7, undefined, "a/b"])
      assert.equal(await code(s.issuer.issue(BOOTSTRAPPER, bad)), 400, String(bad));
    assert.deepEqual(s.asked, []);
    const none = await setup(() => Promise.reject(new Error("no responders")));
    assert.equal(await code(none.issuer.issue(BOOTSTRAPPER, "worker-1")), 503);
    for (const x of [s, none]) {
      assert.deepEqual(await x.secretNames(), []);
      assert.equal(readFileSync(x.tokenFile, "utf8"), TOKEN_FILE);
    }
  });

  it("concurrent joins each get their Secret", async () => {
    const s = await setup();
    const creds = await Promise.all(Array.from({ length: 8 }, (_, i) => s.issuer.issue(BOOTSTRAPPER, `n-${i}`)));
    const a = s.authn();
    for (const c of creds) assert.equal((await a.authenticateToken(c.token))?.name, c.user);
    assert.equal((await s.secretNames()).length, 8);
  });
});
