import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { createLogger, FailureLog } from "./index.js";

/** A logger whose parsed lines are kept, a hand-driven clock and the window timer it scheduled. */
function setup(opts: { windowMs?: number; wholePerWindow?: number } = {}) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb): void {
      for (const l of chunk.toString("utf8").split("\n")) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  const log = createLogger({ service: "node-agent", level: "debug", destination: stream });
  let t = 1_000;
  let timer: { fn: () => void; at: number } | undefined;
  const failures = new FailureLog(log, {
    ...opts,
    now: () => t,
    schedule: (fn, ms) => {
      timer = { fn, at: t + ms };
      return () => (timer = undefined);
    },
  });
  /** Moves the clock, firing the window's timer when it is due. */
  const advance = (ms: number): void => {
    t += ms;
    if (timer && timer.at <= t) {
      const { fn } = timer;
      timer = undefined;
      fn();
    }
  };
  return { lines, failures, advance, log };
}

const down = new Error("connection refused");

describe("FailureLog", () => {
  it("5,000 subjects failing the same way every 10 s write 5 whole lines and one summary a window, not 5,000 a round", () => {
    const { lines, failures, advance } = setup({ windowMs: 30_000, wholePerWindow: 5 });
    for (let round = 0; round < 3; round++) {
      for (let n = 0; n < 5_000; n++) failures.failed("periodic task failed", `node-${n}`, down, { task: "lease" });
      advance(10_000);
    }
    const whole = lines.filter((l) => l["msg"] === "periodic task failed");
    assert.equal(whole.length, 5);
    assert.deepEqual(
      whole.map((l) => (l["err"] as { stack?: string }).stack?.startsWith("Error: connection refused")),
      [true, true, true, true, true],
    );
    const summaries = lines.filter((l) => l["msg"] === "failures summarised");
    assert.equal(summaries.length, 1);
    const s = summaries[0]!;
    assert.equal(s["of"], "periodic task failed");
    assert.equal(s["failures"], 14_995);
    assert.equal(s["subjects"], 5_000);
    assert.equal(s["task"], "lease");
    assert.equal(s["lastSubject"], "node-4999");
    assert.deepEqual(s["lastError"], { type: "Error", message: "connection refused" });
    assert.equal(s["level"], 40);
  });

  it("one subject failing for a minute: its first failure whole, a summary a window, then one recovery line", () => {
    const { lines, failures, advance } = setup({ windowMs: 30_000 });
    for (let i = 0; i < 6; i++) {
      failures.failed("periodic task failed", "node-a", down, { task: "node-status" });
      advance(10_000);
    }
    assert.equal(failures.failing("periodic task failed", "node-a"), true);
    failures.recovered("periodic task failed", "node-a", { task: "node-status" });
    assert.equal(failures.failing("periodic task failed", "node-a"), false);
    failures.recovered("periodic task failed", "node-a", { task: "node-status" }); // no streak: nothing
    assert.deepEqual(
      lines.map((l) => [l["msg"], l["failures"]]),
      [
        ["periodic task failed", 1],
        ["failures summarised", 2],
        // The next window: the same message again (its streak wrote it a window ago), then counted.
        ["periodic task failed", 4],
        ["failures summarised", 2],
        ["recovered", 6],
      ],
    );
    assert.equal(lines.at(-1)!["failingMs"], 60_000);
    assert.equal(lines.at(-1)!["level"], 30);
  });

  it("a new error of a subject is written whole at once; kinds keep their own budgets", () => {
    const { lines, failures } = setup({ wholePerWindow: 1 });
    failures.failed("periodic task failed", "node-a", down);
    failures.failed("periodic task failed", "node-b", down); // budget spent: counted
    failures.failed("reconcile failed", "default/p", new Error("conflict"), {}, undefined, "error");
    assert.deepEqual(
      lines.map((l) => [l["msg"], l["level"]]),
      [
        ["periodic task failed", 40],
        ["reconcile failed", 50],
      ],
    );
    const { lines: l2, failures: f2 } = setup({ wholePerWindow: 5 });
    f2.failed("periodic task failed", "node-a", down);
    f2.failed("periodic task failed", "node-a", new Error("timeout"));
    f2.failed("periodic task failed", "node-a", new Error("timeout"));
    assert.deepEqual(
      l2.map((l) => (l["err"] as { message: string }).message),
      ["connection refused", "timeout"],
    );
  });

  it("writes whole lines on the subject's own logger, and counts recoveries past the budget in the summary", () => {
    const { lines, failures, advance, log } = setup({ wholePerWindow: 2 });
    for (let n = 0; n < 4; n++) failures.failed("pod status not written", `p${n}`, down, {}, log.child({ node: "n1" }));
    assert.deepEqual(
      lines.map((l) => l["node"]),
      ["n1", "n1"],
    );
    for (let n = 0; n < 4; n++) failures.recovered("pod status not written", `p${n}`);
    advance(30_000);
    assert.deepEqual(
      lines.map((l) => l["msg"]),
      ["pod status not written", "pod status not written", "recovered", "recovered", "failures summarised"],
    );
    assert.equal(lines.at(-1)!["failures"], 2);
    assert.equal(lines.at(-1)!["recovered"], 2);
  });

  it("flush writes what is counted; a subject silent for ten windows is forgotten", () => {
    const { lines, failures, advance } = setup({ windowMs: 1_000, wholePerWindow: 1 });
    failures.failed("x failed", "a", down);
    failures.failed("x failed", "b", down);
    failures.flush();
    assert.deepEqual(
      lines.map((l) => l["msg"]),
      ["x failed", "failures summarised"],
    );
    advance(11_000);
    failures.failed("x failed", "c", down); // rolls the window: a and b forgotten
    assert.equal(failures.failing("x failed", "a"), false);
    assert.equal(failures.failing("x failed", "c"), true);
  });
});
