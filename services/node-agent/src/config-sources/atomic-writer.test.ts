import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { Worker } from "node:worker_threads";
import { dataDirPrefix, readCurrent, writeAtomic } from "./atomic-writer.js";
import type { Payload } from "./resolve.js";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "atomic-writer-"));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const te = new TextEncoder();
const payload = (o: Record<string, string>, mode = 0o644): Payload => new Map(Object.entries(o).map(([k, v]) => [k, { data: te.encode(v), mode }]));

describe("atomic writer", () => {
  it("lays out the kubelet's ..<timestamp> dir, ..data and key symlinks, with modes", () => {
    const dir = path.join(tmp, "layout");
    assert.equal(dataDirPrefix(new Date("2026-11-25T22:00:00.123Z")), "..2026_11_25_22_00_00.123");
    assert.equal(writeAtomic(dir, payload({ a: "1", "conf/b": "2" }, 0o600)), true);
    const data = fs.readlinkSync(path.join(dir, "..data"));
    assert.match(data, /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d{3}/);
    assert.equal(fs.readlinkSync(path.join(dir, "a")), "..data/a");
    assert.equal(fs.readlinkSync(path.join(dir, "conf")), "..data/conf");
    assert.equal(fs.readFileSync(path.join(dir, "conf/b"), "utf8"), "2");
    assert.equal(fs.statSync(path.join(dir, "a")).mode & 0o777, 0o600);
    // Unchanged: nothing written.
    assert.equal(writeAtomic(dir, payload({ a: "1", "conf/b": "2" }, 0o600)), false);
    assert.equal(fs.readlinkSync(path.join(dir, "..data")), data);
    // A mode change is a change.
    assert.equal(writeAtomic(dir, payload({ a: "1", "conf/b": "2" })), true);
    assert.equal(fs.statSync(path.join(dir, "a")).mode & 0o777, 0o644);
  });

  it("an update swaps the data dir, removes the old one and keys no longer there", () => {
    const dir = path.join(tmp, "update");
    writeAtomic(dir, payload({ a: "1", gone: "x" }));
    const first = fs.readlinkSync(path.join(dir, "..data"));
    writeAtomic(dir, payload({ a: "2", added: "y" }));
    assert.notEqual(fs.readlinkSync(path.join(dir, "..data")), first);
    assert.equal(fs.existsSync(path.join(dir, first)), false);
    assert.deepEqual(
      fs
        .readdirSync(dir)
        .filter((n) => !n.startsWith(".."))
        .sort(),
      ["a", "added"],
    );
    assert.equal(fs.readFileSync(path.join(dir, "a"), "utf8"), "2");
    assert.deepEqual([...readCurrent(dir)!.keys()].sort(), ["a", "added"]);
  });

  it("refuses paths out of the volume and writes nothing", () => {
    const dir = path.join(tmp, "escape");
    assert.throws(() => writeAtomic(dir, payload({ "../x": "1" })), /invalid path/);
    assert.throws(() => writeAtomic(dir, payload({ "/etc/x": "1" })), /invalid path/);
    assert.equal(fs.existsSync(path.join(tmp, "x")), false);
  });

  it("a reader never sees half of an update: every read is a whole old or new version", async () => {
    const dir = path.join(tmp, "race");
    const version = (n: number) => ({ a: `${n}:`.padEnd(64 * 1024, String(n % 10)), b: String(n) });
    writeAtomic(dir, payload(version(0)));
    // A reader in another thread, reading `a` and `b` through their symlinks as a container would, as fast as it can
    // (ENOENT is possible in principle: a path walk that resolved ..data just before the swap, the old dir then removed).
    const reader = new Worker(
      `const fs = require("node:fs"); const { parentPort, workerData } = require("node:worker_threads");
       let reads = 0, bad = [];
       parentPort.on("message", () => parentPort.postMessage({ reads, bad: bad.slice(0, 5) }));
       (function loop() {
         for (let i = 0; i < 200; i++) {
           try {
             const a = fs.readFileSync(workerData + "/a", "utf8");
             const n = a.slice(0, a.indexOf(":"));
             const whole = a.length === 65536 && a.slice(n.length + 1).split("").every((c) => c === String(Number(n) % 10));
             const viaKey = fs.readFileSync(workerData + "/b", "utf8");
             if (!whole || !/^\\d+$/.test(viaKey)) bad.push({ n, len: a.length, viaKey });
             reads++;
           } catch (e) { if (e.code !== "ENOENT") bad.push(String(e)); else reads++; }
         }
         setImmediate(loop);
       })();`,
      { eval: true, workerData: dir },
    );
    try {
      for (let n = 1; n <= 150; n++) writeAtomic(dir, payload(version(n)));
      const seen = await new Promise<{ reads: number; bad: unknown[] }>((resolve) => {
        reader.once("message", resolve);
        reader.postMessage("report");
      });
      assert.deepEqual(seen.bad, []);
      assert.ok(seen.reads > 0);
      assert.equal(fs.readFileSync(path.join(dir, "b"), "utf8"), "150");
    } finally {
      await reader.terminate();
    }
  });
});
