// The token file re-read when it changes: a line appended after the api
// started authenticates; a line removed stops authenticating, though only known
// tokens ask; a file that no longer parses keeps the tokens last read.
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { ReloadingTokens } from "./reloading-tokens.js";

describe("ReloadingTokens", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "choreo-tokens-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("knows a line appended after it was made, and keeps the last good read of a broken file", () => {
    const file = path.join(dir, "tokens");
    writeFileSync(file, "admin-token\n", { mode: 0o600 });
    const reloads: number[] = [];
    const tokens = new ReloadingTokens(file, { onReload: (n, err) => reloads.push(err ? -1 : n) });
    assert.equal(tokens.authenticateToken("admin-token")?.name, "admin");
    assert.equal(tokens.authenticateToken("node-token"), undefined);
    appendFileSync(file, 'node-token,system:node:node-1,system:node:node-1,"system:nodes"\n');
    const node = tokens.authenticateToken("node-token");
    assert.equal(node?.name, "system:node:node-1");
    assert.deepEqual(node?.groups, ["system:nodes", "system:authenticated"]);
    assert.deepEqual(reloads, [2]);
    appendFileSync(file, "node-token\n");
    assert.equal(tokens.authenticateToken("unknown"), undefined);
    assert.deepEqual(reloads, [2, -1]);
    assert.equal(tokens.authenticateToken("node-token")?.name, "system:node:node-1");
    assert.equal(tokens.size, 2);
  });

  it("forgets a removed line when only known tokens ask (each a stat, at most once per knownRecheckMs)", () => {
    const file = path.join(dir, "tokens-removed");
    writeFileSync(file, 'admin-token\nbob-token,bob,uid-bob,"dev"\ncarol-token,carol,uid-carol,""\n', { mode: 0o600 });
    const tokens = new ReloadingTokens(file, { knownRecheckMs: 0 });
    assert.equal(tokens.authenticateToken("carol-token")?.name, "carol");
    writeFileSync(file, 'admin-token\nbob-token,bob,uid-bob,"dev"\n');
    assert.equal(tokens.authenticateToken("carol-token"), undefined, "carol's own request sees her line gone");
    assert.equal(tokens.authenticateToken("bob-token")?.name, "bob");
    assert.equal(tokens.size, 2);
  });
});
