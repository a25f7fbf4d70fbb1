// provisionIdentity: one line per token in the api's file — an identity
// whose groups changed (hollow nodes gained system:hollow-nodes) gets its
// line replaced, never a second line for the same token (the api refuses a
// file with a duplicate token).
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { hollowNodesIdentity, nodeIdentity, provisionIdentity, tokenLine } from "./identities.js";

describe("provisionIdentity", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "choreo-identities-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("appends a new identity's line once, and replaces the line of a token whose groups changed", () => {
    const api = path.join(dir, "api", "tokens");
    const hollowFile = path.join(dir, "identities", "hollow.token");
    const old = { user: hollowNodesIdentity("h-").user, groups: ["system:nodes"] };
    const token = provisionIdentity(api, hollowFile, old);
    const nodeToken = provisionIdentity(api, path.join(dir, "identities", "node-1.token"), nodeIdentity("node-1"));
    assert.equal(provisionIdentity(api, hollowFile, old), token, "idempotent");
    const lines = (): string[] => readFileSync(api, "utf8").split("\n").filter(Boolean);
    assert.equal(lines().length, 3);
    assert.equal(provisionIdentity(api, hollowFile, hollowNodesIdentity("h-")), token, "the token is kept");
    assert.deepEqual(lines().slice(1), [tokenLine(token, hollowNodesIdentity("h-")), tokenLine(nodeToken, nodeIdentity("node-1"))]);
    assert.match(lines()[1] ?? "", /"system:nodes,system:hollow-nodes"$/);
    assert.equal(statSync(api).mode & 0o777, 0o600);
  });
});
