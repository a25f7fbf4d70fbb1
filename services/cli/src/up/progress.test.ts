// choreo up's progress renderer, both forms, on a fake clock: elsewhere than
// a terminal one plain line per ended step with its duration and no escape
// code; on a terminal the running step redrawn in place (spinner, detail,
// elapsed) and replaced by its result line; --quiet writes nothing.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatDuration, Progress } from "./progress.js";

/** A progress writing into a string, on a clock the test moves. */
function harness(tty: boolean, extra: { quiet?: boolean; columns?: number } = {}) {
  let text = "";
  let t = 1_000;
  const progress = new Progress({ write: (s) => (text += s), tty, now: () => t, redrawMs: 0, ...extra });
  return { progress, text: () => text, advance: (ms: number) => (t += ms) };
}

const ESC = /\x1b/;

describe("up progress, not a terminal", () => {
  it("prints one plain line per step when it ends, in order, with durations and no escape codes", async () => {
    const h = harness(false);
    const a = h.progress.begin("bus and store started");
    a.update("nats-server, redis-server");
    assert.equal(h.text(), "", "nothing while a step runs");
    h.advance(420);
    a.done("nats://127.0.0.1:14222, redis://127.0.0.1:16379");
    const nodes = h.progress.begin("nodes Ready");
    nodes.update("1/2");
    h.advance(1_500);
    nodes.update("2/2");
    nodes.done();
    await assert.rejects(
      h.progress.run("examples applied", async () => {
        h.advance(65_000);
        throw new Error("apply failed\nsecond line");
      }),
      /apply failed/,
    );
    const ran = await h.progress.run(
      "api ready",
      () => Promise.resolve(3),
      (n) => `${n} replicas`,
    );
    assert.equal(ran, 3);
    assert.equal(
      h.text(),
      [
        "✓ bus and store started — nats://127.0.0.1:14222, redis://127.0.0.1:16379 (0.4s)",
        "✓ nodes Ready — 2/2 (1.5s)",
        "✗ examples applied — apply failed (1m05s)",
        "✓ api ready — 3 replicas (0.0s)",
        "",
      ].join("\n"),
    );
    assert.doesNotMatch(h.text(), ESC);
  });

  it("ends a running step when the next begins, ignores calls on an ended one, and prints lines between steps", () => {
    const h = harness(false);
    const first = h.progress.begin("dependencies", "present");
    h.progress.print("a line of its own");
    h.progress.begin("images ready");
    first.fail("too late");
    first.update("ignored");
    assert.equal(h.text(), "a line of its own\n✓ dependencies — present (0.0s)\n");
  });
});

describe("up progress on a terminal", () => {
  it("redraws the running step in place and replaces it with its result line", () => {
    const h = harness(true);
    const s = h.progress.begin("nodes Ready");
    h.advance(300);
    s.update("1/2");
    h.advance(900);
    s.done("2/2");
    const out = h.text();
    // Every draw starts at the line's beginning and clears it; no newline until the step ends.
    const draws = out.split("\r\x1b[2K").filter(Boolean);
    assert.equal(draws.length, 3, JSON.stringify(out));
    assert.match(draws[0]!, /^\x1b\[36m⠋\x1b\[0m nodes Ready \x1b\[2m0\.0s\x1b\[0m$/);
    assert.match(draws[1]!, /^\x1b\[36m⠋\x1b\[0m nodes Ready \x1b\[2m— 1\/2\x1b\[0m \x1b\[2m0\.3s\x1b\[0m$/);
    assert.equal(draws[2], "\x1b[32m✓\x1b[0m nodes Ready \x1b[2m— 2/2\x1b[0m \x1b[2m(1.2s)\x1b[0m\n");
    assert.equal(out.split("\n").length, 2, "one line once ended");
  });

  it("spins on its own, cuts a running line to the terminal's width, and clears it for a printed line", async () => {
    let text = "";
    const progress = new Progress({ write: (s) => (text += s), tty: true, redrawMs: 5, columns: 40 });
    const s = progress.begin("examples applied", "5 objects; waiting for the web app on http://127.0.0.1:30080/");
    await new Promise((r) => setTimeout(r, 60));
    const frames = new Set([...text.matchAll(/\x1b\[36m(.)\x1b\[0m/g)].map((m) => m[1]));
    assert.ok(frames.size >= 2, `the spinner turned: ${[...frames].join("")}`);
    const last = text.split("\r\x1b[2K").pop() ?? "";
    assert.ok(last.replace(/\x1b\[\d+m/g, "").length <= 39, last);
    assert.match(last, /…/);
    progress.print("a log line");
    assert.match(text, /\r\x1b\[2Ka log line\n\r\x1b\[2K/);
    s.done();
    progress.close();
    const after = text.length;
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(text.length, after, "no redraw once the step ended");
  });
});

describe("up progress, closed while a step runs (Ctrl-C while starting)", () => {
  it("ends the step as interrupted, on its own line, in both forms", () => {
    const plain = harness(false);
    plain.progress.begin("api ready");
    plain.advance(2_000);
    plain.progress.close();
    assert.equal(plain.text(), "✗ api ready — interrupted (2.0s)\n");
    const tty = harness(true);
    tty.progress.begin("api ready");
    tty.progress.close();
    assert.ok(tty.text().endsWith("\x1b[31m✗\x1b[0m api ready \x1b[2m— interrupted\x1b[0m \x1b[2m(0.0s)\x1b[0m\n"), JSON.stringify(tty.text()));
  });
});

describe("up progress, quiet", () => {
  it("writes nothing in either form", async () => {
    for (const tty of [false, true]) {
      const h = harness(tty, { quiet: true });
      h.progress.begin("dependencies").done("present");
      await h.progress.run("api ready", () => Promise.resolve());
      h.progress.print("not even this");
      assert.equal(h.text(), "");
    }
  });
});

describe("formatDuration", () => {
  it("reads as a person would", () => {
    assert.deepEqual([0, 420, 12_345, 59_949, 60_000, 65_000, 754_000].map(formatDuration), ["0.0s", "0.4s", "12.3s", "59.9s", "1m00s", "1m05s", "12m34s"]);
  });
});
