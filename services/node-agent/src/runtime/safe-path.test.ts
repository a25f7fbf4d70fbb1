import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { bindWalked, bindTarget, unmountBinds, type WalkedMount } from "./safe-binds.js";
import { bindOpened, mountsBelow, openBeneath, UnsafePathError, unmountBelow } from "./safe-path.js";

// Real files, real bind mounts (root): the walk is only as good as what the kernel does with it.
describe("safe path walk", () => {
  let dir = "";
  let vol = "";
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "choreo-safe-path-"));
    vol = path.join(dir, "vol");
    fs.mkdirSync(path.join(vol, "a/b"), { recursive: true });
    fs.writeFileSync(path.join(vol, "a/b/file"), "inside");
    fs.symlinkSync("/", path.join(vol, "root-link"));
    fs.symlinkSync("/etc", path.join(vol, "a/etc-link"));
  });
  after(async () => {
    await unmountBelow(dir);
    assert.deepEqual(mountsBelow(dir), []);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const open = (sub: string, create = false) => openBeneath(vol, sub, { checkRoot: false, create });
  const close = (o: { fd: number }) => fs.closeSync(o.fd);

  it("opens a directory and a file beneath the root", () => {
    const d = open("a/b");
    assert.equal(d.isDir, true);
    close(d);
    const f = open("a/b/file");
    assert.equal(f.isDir, false);
    close(f);
  });

  it("refuses a symlink as the last component", () => {
    assert.throws(
      () => open("root-link"),
      (e: unknown) => e instanceof UnsafePathError && /symbolic link/.test(e.message),
    );
    assert.throws(() => open("a/etc-link"), UnsafePathError);
  });

  it("refuses a symlink as a middle component", () => {
    assert.throws(
      () => open("root-link/etc"),
      (e: unknown) => e instanceof UnsafePathError && /root-link/.test(e.message),
    );
    assert.throws(() => open("a/etc-link/passwd"), UnsafePathError);
  });

  it("refuses ..", () => {
    assert.throws(() => open("../vol/a"), /"\.\." is not allowed/);
    assert.throws(() => open("a/../../x"), UnsafePathError);
  });

  it("refuses a missing component unless told to create it, then makes directories", () => {
    assert.throws(() => open("new/deeper"), /does not exist/);
    const made = open("new/deeper", true);
    assert.equal(made.isDir, true);
    close(made);
    assert.equal(fs.lstatSync(path.join(vol, "new/deeper")).isDirectory(), true);
    // Creating never follows a symlink either.
    assert.throws(() => open("root-link/choreo-should-not-exist", true), UnsafePathError);
    assert.equal(fs.existsSync("/choreo-should-not-exist"), false);
  });

  it("refuses a symlink in a hostPath from / (checkRoot), and opens a plain one", () => {
    assert.throws(() => openBeneath(path.join(vol, "a/etc-link"), "", { checkRoot: true, create: false }), UnsafePathError);
    assert.throws(() => openBeneath(path.join(vol, "root-link"), "etc", { checkRoot: true, create: false }), UnsafePathError);
    const ok = openBeneath(path.join(vol, "a"), "b", { checkRoot: true, create: false });
    assert.equal(ok.isDir, true);
    close(ok);
  });

  it("binds a file and a directory by descriptor, read-only when asked", async () => {
    const fileTarget = path.join(dir, "targets/file");
    await bindOpened(open("a/b/file"), fileTarget, false);
    assert.equal(fs.readFileSync(fileTarget, "utf8"), "inside");
    const dirTarget = path.join(dir, "targets/ro");
    await bindOpened(open("a/b"), dirTarget, true);
    assert.deepEqual(fs.readdirSync(dirTarget), ["file"]);
    assert.throws(() => fs.writeFileSync(path.join(dirTarget, "x"), "x"), { code: "EROFS" });
    await unmountBelow(path.join(dir, "targets"));
  });

  it("keeps the bound directory when the path is swapped for a symlink after the walk (the descriptor is held)", async () => {
    fs.mkdirSync(path.join(vol, "race"));
    fs.writeFileSync(path.join(vol, "race/original"), "");
    const opened = open("race");
    // The attacker's swap, between the walk and the mount.
    fs.renameSync(path.join(vol, "race"), path.join(vol, "race-moved"));
    fs.symlinkSync("/", path.join(vol, "race"));
    const target = path.join(dir, "targets/race");
    await bindOpened(opened, target, false);
    assert.deepEqual(fs.readdirSync(target), ["original"], "the original directory, not /");
    assert.equal(fs.existsSync(path.join(target, "etc")), false);
    await unmountBelow(path.join(dir, "targets"));
  });

  it("rebinds a container's mounts afresh and refuses the swapped path on the next start", async () => {
    const podDir = path.join(dir, "pod");
    fs.mkdirSync(path.join(podDir, "volumes/data"), { recursive: true });
    const m: WalkedMount = { volume: "data", index: 0, root: path.join(podDir, "volumes/data"), sub: "x", hostPath: false, readOnly: false };
    const kinds = await bindWalked(podDir, "b", [m]);
    assert.deepEqual([...kinds], [[0, true]], "the missing subPath was made as a directory");
    const target = bindTarget(podDir, "b", m);
    fs.writeFileSync(path.join(target, "mine"), "");
    fs.rmSync(path.join(podDir, "volumes/data/x"), { recursive: true });
    fs.symlinkSync("/", path.join(podDir, "volumes/data/x"));
    await assert.rejects(bindWalked(podDir, "b", [m]), (e: unknown) => e instanceof UnsafePathError && /volumeMount "data" of container "b"/.test(e.message));
    assert.deepEqual(mountsBelow(podDir), [], "nothing stays bound after a refusal");
    assert.deepEqual(fs.readdirSync(target), [], "the target is an empty agent directory");
    await unmountBinds(podDir);
  });
});
