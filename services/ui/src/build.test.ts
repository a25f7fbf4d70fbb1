// The bundle is built offline by esbuild from web/ (preact bundled in), and
// a missing or partial dist/ is stale.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { buildUi, isStale } from "./build.js";

describe("buildUi", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "choreo-ui-build-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("writes index.html, app.js and app.css, and a fresh build is not stale", async () => {
    const out = path.join(dir, "dist");
    assert.equal(await isStale(out), true);
    await buildUi(out);
    const js = readFileSync(path.join(out, "app.js"), "utf8");
    assert.ok(!/from\s*["']preact/.test(js), "preact is bundled in, no import left to resolve");
    assert.ok(!/https?:\/\/[a-z]/i.test(readFileSync(path.join(out, "index.html"), "utf8")), "no CDN");
    assert.ok(readFileSync(path.join(out, "app.css"), "utf8").includes(".phase-Pending"));
    assert.equal(await isStale(out), false);
    // Built again over itself: replaced whole.
    await buildUi(out);
    assert.equal(await isStale(out), false);
    rmSync(path.join(out, "app.js"));
    assert.equal(await isStale(out), true);
  });
});
