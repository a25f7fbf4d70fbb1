import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { childLogger, createLogger, silentLogger } from "./index.js";

/** A destination stream that keeps the parsed lines. */
function capture(): { stream: Writable; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb): void {
      for (const l of chunk.toString("utf8").split("\n")) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { stream, lines };
}

describe("log", () => {
  it("writes JSON lines with the service field, ISO time and the fields first", () => {
    const { stream, lines } = capture();
    const log = createLogger({ service: "scheduler", level: "info", destination: stream });
    log.info({ pod: "default/a" }, "pod bound");
    log.debug({ pod: "default/b" }, "not written at info");
    assert.equal(lines.length, 1);
    const line = lines[0]!;
    assert.equal(line["service"], "scheduler");
    assert.equal(line["pod"], "default/a");
    assert.equal(line["msg"], "pod bound");
    assert.equal(line["level"], 30);
    assert.match(String(line["time"]), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it("child loggers carry the subsystem", () => {
    const { stream, lines } = capture();
    const log = childLogger(createLogger({ service: "kubelet", level: "debug", destination: stream }), "pleg");
    log.debug({ n: 1 }, "relist");
    assert.equal(lines[0]!["subsystem"], "pleg");
    assert.equal(lines[0]!["service"], "kubelet");
  });

  it("takes the level from CHOREO_LOG_LEVEL, and info for unknown names", () => {
    const saved = process.env["CHOREO_LOG_LEVEL"];
    try {
      process.env["CHOREO_LOG_LEVEL"] = "warn";
      assert.equal(createLogger({ service: "x", destination: capture().stream }).level, "warn");
      process.env["CHOREO_LOG_LEVEL"] = "loud";
      assert.equal(createLogger({ service: "x", destination: capture().stream }).level, "info");
      delete process.env["CHOREO_LOG_LEVEL"];
      assert.equal(createLogger({ service: "x", destination: capture().stream }).level, "info");
    } finally {
      if (saved === undefined) delete process.env["CHOREO_LOG_LEVEL"];
      else process.env["CHOREO_LOG_LEVEL"] = saved;
    }
  });

  it("silentLogger writes nothing", () => {
    assert.equal(silentLogger().level, "silent");
  });
});
