import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { formatLine, logFiles, readLog, rotateIfNeeded } from "./logs.js";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "choreo-logs-"));
const line = (i: number, stream = "stdout") => `2026-01-01T00:00:${String(i % 60).padStart(2, "0")}.000000000Z ${stream} F line${i}\n`;

async function text(it: AsyncIterable<Uint8Array>): Promise<string> {
  let s = "";
  for await (const c of it) s += Buffer.from(c).toString("utf8");
  return s;
}

describe("container logs", () => {
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("formats CRI lines with or without their timestamp, and drops older ones", () => {
    assert.equal(formatLine("2026-01-01T00:00:01.5Z stderr F oops: a b", false, undefined), "oops: a b\n");
    assert.equal(formatLine("2026-01-01T00:00:01.5Z stderr F x", true, undefined), "2026-01-01T00:00:01.5Z x\n");
    assert.equal(formatLine("2026-01-01T00:00:01.5Z stdout P part", false, undefined), "part");
    assert.equal(formatLine("2026-01-01T00:00:01Z stdout F old", false, Date.parse("2026-01-01T00:00:02Z")), undefined);
    assert.equal(formatLine("garbage", false, undefined), undefined);
  });

  it("rotates by copy and truncate keeping maxFiles, and reads across the rotated files in order", async () => {
    const log = path.join(dir, "0.log");
    let n = 0;
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 5; i++) fs.appendFileSync(log, line(n++));
      assert.equal(rotateIfNeeded(log, 100, 3), true);
      assert.equal(fs.statSync(log).size, 0);
    }
    fs.appendFileSync(log, line(n++));
    assert.equal(rotateIfNeeded(log, 100, 3), false, "under the size: left alone");
    assert.deepEqual(
      logFiles(log, 3).map((f) => path.basename(f)),
      ["0.log.2", "0.log.1", "0.log"],
    );
    const all = await text(readLog(log, 3, { timestamps: false, follow: false, running: () => false }, new AbortController().signal));
    assert.deepEqual(
      all.trim().split("\n"),
      [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20].map((i) => `line${i}`),
    );
    const tail = await text(readLog(log, 3, { tailLines: 2, timestamps: false, follow: false, running: () => false }, new AbortController().signal));
    assert.equal(tail, "line19\nline20\n");
  });

  it("follows appended lines, across a truncation, until the run ended", async () => {
    const log = path.join(dir, "1.log");
    fs.writeFileSync(log, line(1));
    let running = true;
    const got: string[] = [];
    const done = (async () => {
      for await (const c of readLog(log, 2, { timestamps: false, follow: true, running: () => running }, AbortSignal.timeout(20_000)))
        got.push(Buffer.from(c).toString());
    })();
    const until = async (s: string) => {
      while (!got.join("").endsWith(s)) await new Promise((r) => setTimeout(r, 10));
    };
    await until("line1\n");
    fs.appendFileSync(log, line(2));
    await until("line2\n");
    rotateIfNeeded(log, 1, 2);
    fs.appendFileSync(log, "2026-01-01T00:00:03.000000000Z stdout F li");
    fs.appendFileSync(log, "ne3\n");
    await until("line3\n");
    running = false;
    await done;
    assert.equal(got.join(""), "line1\nline2\nline3\n");
  });

  it("a followed log ends when its signal aborts", async () => {
    const log = path.join(dir, "2.log");
    fs.writeFileSync(log, line(1));
    const ac = new AbortController();
    const done = text(readLog(log, 1, { timestamps: false, follow: true, running: () => true }, ac.signal));
    ac.abort();
    assert.equal(await done, "line1\n");
  });
});
