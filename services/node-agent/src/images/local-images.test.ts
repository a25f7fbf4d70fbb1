// test-tier: servers
// ensureLocalImages against the real filesystem and, when one answers, the
// real Docker engine — with a temp image store and a test-only tag, both
// removed afterwards.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { lstatSync, mkdtempSync, readFileSync, readlinkSync, readdirSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { promisify } from "node:util";
import Docker from "dockerode";
import { dockerHasImage, ensureLocalImages, HOST_BUSYBOX, isStatic } from "./local-images.js";
import { imageRootfs } from "./types.js";
import { engineAnswers } from "../runtime/docker/engine.js";

const run = promisify(execFile);
const quiet = { info: () => undefined };

const haveStaticBusybox = await isStatic(HOST_BUSYBOX).catch(() => false);
const haveDocker = await engineAnswers(new Docker());

describe("ensureLocalImages", { skip: haveStaticBusybox ? false : `${HOST_BUSYBOX} is not a static busybox (apt-get install busybox-static)` }, () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "choreo-images-"));
  const tag = `local/busybox-test:${process.pid}`;
  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    if (haveDocker) await run("docker", ["rmi", "-f", tag]).catch(() => undefined);
  });

  it("builds the busybox rootfs: root dirs, tmp 1777, every applet a relative link, root and nobody", async () => {
    const res = await ensureLocalImages({ imagesDir: dir, docker: false, log: quiet, image: tag });
    assert.equal(res.rootfs, imageRootfs(dir, tag));
    assert.deepEqual([res.built, res.imported], [true, false]);
    for (const d of ["bin", "etc", "tmp", "proc", "sys", "dev", "root", "www", "var/run"]) assert.ok(statSync(path.join(res.rootfs, d)).isDirectory(), d);
    assert.equal(statSync(path.join(res.rootfs, "tmp")).mode & 0o7777, 0o1777);
    assert.ok(statSync(path.join(res.rootfs, "bin/busybox")).isFile());
    const { stdout } = await run(HOST_BUSYBOX, ["--list"]);
    const applets = stdout.split("\n").filter((a) => a && a !== "busybox");
    assert.ok(applets.includes("sh") && applets.includes("httpd") && applets.includes("wget"));
    for (const a of applets) {
      assert.ok(lstatSync(path.join(res.rootfs, "bin", a)).isSymbolicLink(), a);
      assert.equal(readlinkSync(path.join(res.rootfs, "bin", a)), "busybox", a);
    }
    assert.match(readFileSync(path.join(res.rootfs, "etc/passwd"), "utf8"), /^root:x:0:0:.*\nnobody:x:65534:65534:/);
    assert.match(readFileSync(path.join(res.rootfs, "etc/group"), "utf8"), /^root:x:0:\n/);
    assert.deepEqual(readdirSync(path.dirname(res.rootfs)), ["rootfs"], "no temp dirs left beside it");
  });

  it("is idempotent: a second call builds nothing", async () => {
    const res = await ensureLocalImages({ imagesDir: dir, docker: false, log: quiet, image: tag });
    assert.deepEqual([res.built, res.imported], [false, false]);
  });

  it("concurrent callers end with one complete rootfs", async () => {
    const other = path.join(dir, "race");
    const all = await Promise.all([1, 2, 3].map(() => ensureLocalImages({ imagesDir: other, docker: false, log: quiet, image: tag })));
    assert.ok(all.some((r) => r.built));
    assert.ok(statSync(path.join(imageRootfs(other, tag), "bin/busybox")).isFile());
    assert.deepEqual(readdirSync(path.dirname(imageRootfs(other, tag))), ["rootfs"]);
  });

  it("refuses a dynamically linked busybox with a clear message", async () => {
    await assert.rejects(
      ensureLocalImages({ imagesDir: path.join(dir, "dyn"), docker: false, log: quiet, image: tag, busybox: process.execPath }),
      /dynamically linked: install Debian's busybox-static/,
    );
  });

  it("imports the rootfs into docker once; the image runs sh with PATH=/bin", { skip: haveDocker ? false : "no Docker engine answers" }, async () => {
    await run("docker", ["rmi", "-f", tag]).catch(() => undefined);
    const first = await ensureLocalImages({ imagesDir: dir, docker: true, log: quiet, image: tag });
    assert.deepEqual([first.built, first.imported], [false, true]);
    assert.ok(await dockerHasImage(tag));
    const again = await ensureLocalImages({ imagesDir: dir, docker: true, log: quiet, image: tag });
    assert.equal(again.imported, false);
    const { stdout: cfg } = await run("docker", ["image", "inspect", "--format", "{{json .Config.Cmd}} {{json .Config.Env}}", tag]);
    assert.equal(cfg.trim(), '["/bin/sh"] ["PATH=/bin"]');
    const { stdout } = await run("docker", ["run", "--rm", "--network", "none", tag, "sh", "-c", "echo $(id -un):$(id -u) $(ls -ld /tmp | cut -c1-10)"]);
    assert.equal(stdout.trim(), "root:0 drwxrwxrwt");
  });
});
