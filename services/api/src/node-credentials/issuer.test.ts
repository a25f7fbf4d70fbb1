// The exchange's approver (pure, a temp token file and a fake NATS user
// owner): only bootstrappers get a credential, for a well-formed node name,
// and only when the NATS user exists; a refusal leaves the token file as it
// was; a re-join replaces the node's earlier token; the issued token is
// system:node:<name> to the api's token file reader.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { ApiError } from "@choreo/kit";
import { silentLogger } from "@choreo/kit/log";
import { StaticTokens, parseTokenFile } from "../auth/static-tokens.js";
import type { UserInfo } from "../auth/types.js";
import { NodeCredentialIssuer } from "./issuer.js";

const dir = mkdtempSync(path.join(tmpdir(), "choreo-issuer-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const BOOTSTRAPPER: UserInfo = { name: "system:bootstrap:abcdef", uid: "", groups: ["system:bootstrappers", "system:authenticated"], extra: {} };
const ALICE: UserInfo = { name: "alice", uid: "", groups: ["system:authenticated"], extra: {} };

function setup(
  natsUser: (node: string) => Promise<{ user: string; password: string }> = (node) => Promise.resolve({ user: `actor-node-${node}`, password: "pw" }),
) {
  const tokenFile = path.join(dir, `tokens-${Math.random().toString(36).slice(2)}`);
  writeFileSync(tokenFile, "admintoken\nsched,system:kube-scheduler,system:kube-scheduler,\n", { mode: 0o600 });
  const keyFile = path.join(dir, "event-signing.pub");
  writeFileSync(keyFile, "PUBLIC KEY");
  const asked: string[] = [];
  const issuer = new NodeCredentialIssuer({
    tokenFile,
    natsUser: (node) => (asked.push(node), natsUser(node)),
    natsUrl: "nats://10.0.0.1:4222",
    eventVerifyKeyFile: keyFile,
    log: silentLogger(),
  });
  return { issuer, tokenFile, asked };
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

describe("node credential issuer", () => {
  it("issues a bootstrapper the node's token, NATS user and the event key; the token is system:node:<name>", async () => {
    const s = setup();
    const cred = await s.issuer.issue(BOOTSTRAPPER, "worker-1.example");
    assert.equal(cred.user, "system:node:worker-1.example");
    assert.deepEqual(cred.nats, { url: "nats://10.0.0.1:4222", user: "actor-node-worker-1.example", password: "pw" });
    assert.equal(cred.eventVerifyKey, "PUBLIC KEY");
    const users = new StaticTokens(parseTokenFile(readFileSync(s.tokenFile, "utf8")));
    const u = users.authenticateToken(cred.token);
    assert.equal(u?.name, "system:node:worker-1.example");
    assert.deepEqual(
      u?.groups.filter((g) => g !== "system:authenticated"),
      ["system:nodes"],
    );
    // The administrator's and the others' lines are kept.
    assert.equal(users.authenticateToken("admintoken")?.name, "admin");
    assert.equal(users.authenticateToken("sched")?.name, "system:kube-scheduler");
  });

  it("a re-join replaces the node's earlier token", async () => {
    const s = setup();
    const first = await s.issuer.issue(BOOTSTRAPPER, "worker-1");
    const second = await s.issuer.issue(BOOTSTRAPPER, "worker-1");
    const users = new StaticTokens(parseTokenFile(readFileSync(s.tokenFile, "utf8")));
    assert.equal(users.authenticateToken(first.token), undefined);
    assert.equal(users.authenticateToken(second.token)?.name, "system:node:worker-1");
    assert.equal(
      readFileSync(s.tokenFile, "utf8")
        .split("\n")
        .filter((l) => l.includes("system:node:worker-1")).length,
      1,
    );
  });

  it("refuses anyone but a bootstrapper (403), a bad node name (400), a cluster without a NATS user owner (503) — the token file unchanged", async () => {
    const s = setup();
    const before = readFileSync(s.tokenFile, "utf8");
    assert.equal(await code(s.issuer.issue(ALICE, "worker-1")), 403);
    for (const bad of ["", "Worker", "-x", "a_b", "x".repeat(254), 7, undefined, "a/b"])
      assert.equal(await code(s.issuer.issue(BOOTSTRAPPER, bad)), 400, String(bad));
    assert.deepEqual(s.asked, []);
    const none = setup(() => Promise.reject(new Error("no responders")));
    const noneBefore = readFileSync(none.tokenFile, "utf8");
    assert.equal(await code(none.issuer.issue(BOOTSTRAPPER, "worker-1")), 503);
    assert.equal(readFileSync(none.tokenFile, "utf8"), noneBefore);
    assert.equal(readFileSync(s.tokenFile, "utf8"), before);
  });

  it("exchanges one at a time: concurrent joins each keep their line", async () => {
    const s = setup();
    const creds = await Promise.all(Array.from({ length: 8 }, (_, i) => s.issuer.issue(BOOTSTRAPPER, `n-${i}`)));
    const users = new StaticTokens(parseTokenFile(readFileSync(s.tokenFile, "utf8")));
    for (const c of creds) assert.equal(users.authenticateToken(c.token)?.name, c.user);
  });
});
