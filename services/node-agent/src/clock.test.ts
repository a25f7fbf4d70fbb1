import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import { nowRfc3339Cached, slottedSleep, slottedTimeout } from "./clock.js";
import { periodSlotMs } from "./periodic.js";

describe("slottedTimeout", () => {
  it("runs callbacks due in one slot from one timer, in the order set, no earlier than asked and within the slot", async () => {
    const slotMs = 40;
    const t0 = Date.now();
    const ran: { i: number; at: number; tick: number }[] = [];
    let tick = 0;
    let t1 = t0; // when the last callback was set: each call reads the clock itself
    // A macrotask between two callbacks would run this: callbacks of one slot all see the same tick.
    const ticker = setInterval(() => tick++, 1);
    await new Promise<void>((resolve) => {
      for (let i = 0; i < 5; i++)
        slottedTimeout(
          () => {
            ran.push({ i, at: Date.now(), tick });
            if (ran.length === 5) resolve();
          },
          25 + i,
          slotMs,
        );
      t1 = Date.now();
    });
    clearInterval(ticker);
    assert.deepEqual(
      ran.map((r) => r.i),
      [0, 1, 2, 3, 4],
    );
    for (const r of ran) assert.ok(r.at - t0 >= 25 + r.i, `callback ${r.i} ran after ${r.at - t0} ms, asked for ${25 + r.i}`);
    // Due 25–29 ms after they were set: one slot unless the first's due time and the last's fall on either
    // side of a slot boundary (under load the loop setting them can span milliseconds: compare with t1).
    const slotsUsed = new Set(ran.map((r) => Math.ceil((r.at - 0.5) / slotMs))).size;
    if (Math.ceil((t0 + 25) / slotMs) === Math.ceil((t1 + 29) / slotMs)) assert.equal(new Set(ran.map((r) => r.tick)).size, 1, `${slotsUsed} slots`);
  });

  it("a cancelled callback never runs, and the others of its slot still do", async () => {
    let a = 0;
    let b = 0;
    const cancelA = slottedTimeout(() => a++, 5, 10);
    slottedTimeout(() => b++, 5, 10);
    cancelA();
    cancelA(); // twice is fine
    await new Promise((r) => setTimeout(r, 40));
    assert.equal(a, 0);
    assert.equal(b, 1);
  });

  it("a slot whose callbacks are all cancelled holds no timer (the process may exit)", async () => {
    const before = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const cancel = slottedTimeout(() => assert.fail("cancelled"), 300_000, 100);
    assert.equal(process.getActiveResourcesInfo().filter((r) => r === "Timeout").length, before + 1);
    cancel();
    assert.equal(process.getActiveResourcesInfo().filter((r) => r === "Timeout").length, before);
  });
});

describe("slottedSleep", () => {
  it("resolves true after the wait, false at once on abort", async () => {
    assert.equal(await slottedSleep(5, 10), true);
    const ac = new AbortController();
    const p = slottedSleep(300_000, 100, ac.signal);
    ac.abort();
    assert.equal(await p, false);
    assert.equal(await slottedSleep(5, 10, ac.signal), false);
  });
});

describe("periodSlotMs", () => {
  it("is a 50th of the period, between 1 and 100 ms", () => {
    assert.equal(periodSlotMs(10_000), 100);
    assert.equal(periodSlotMs(2_000), 40);
    assert.equal(periodSlotMs(20), 1);
  });
});

describe("nowRfc3339Cached", () => {
  it("says what kit's nowRfc3339 says, for every millisecond of a second and across seconds", () => {
    const base = Date.parse("2026-11-27T04:59:58.000Z");
    for (let ms = base; ms < base + 3_000; ms += 7) assert.equal(nowRfc3339Cached(ms), nowRfc3339(ms));
    assert.equal(nowRfc3339Cached(base + 999), "2026-11-27T04:59:58Z");
    assert.equal(nowRfc3339Cached(base + 1_000), "2026-11-27T04:59:59Z");
  });
});
