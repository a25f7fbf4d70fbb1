import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { resolveInConfigVolume } from "../runtime/safe-binds.js";
import { UnsafePathError } from "../runtime/safe-path.js";
import { writeAtomic } from "./atomic-writer.js";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "config-subpath-"));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const te = new TextEncoder();

describe("a subPath into a config volume", () => {
  it("follows the volume's own symlinks to the current data dir, and never out of the volume", () => {
    const vol = path.join(tmp, "vol");
    writeAtomic(
      vol,
      new Map([
        ["greeting", { data: te.encode("hello"), mode: 0o644 }],
        ["conf/app.ini", { data: te.encode("x=1"), mode: 0o644 }],
      ]),
    );
    const data = fs.readlinkSync(path.join(vol, "..data"));
    assert.equal(resolveInConfigVolume(vol, "greeting"), `${data}/greeting`);
    assert.equal(resolveInConfigVolume(vol, "conf/app.ini"), `${data}/conf/app.ini`);
    assert.equal(resolveInConfigVolume(vol, "conf"), `${data}/conf`);
    // After an update the same subPath names the new version (what a restarted container binds).
    writeAtomic(vol, new Map([["greeting", { data: te.encode("bonjour"), mode: 0o644 }]]));
    const next = fs.readlinkSync(path.join(vol, "..data"));
    assert.notEqual(next, data);
    assert.equal(resolveInConfigVolume(vol, "greeting"), `${next}/greeting`);
    // A link out of the volume (never written by the agent, but were it there) and `..` are refused, as is what does not exist.
    fs.symlinkSync("/etc", path.join(vol, "evil"));
    assert.throws(() => resolveInConfigVolume(vol, "evil/passwd"), UnsafePathError);
    assert.throws(() => resolveInConfigVolume(vol, "../vol/greeting/../../.."), UnsafePathError);
    assert.throws(() => resolveInConfigVolume(vol, "nope"), UnsafePathError);
  });
});
