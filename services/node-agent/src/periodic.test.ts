import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { periodic } from "./periodic.js";

/** Lets the task's promises run (setImmediate is not among the mocked timers). */
const settle = () => new Promise((r) => setImmediate(r));

describe("periodic", () => {
  for (const [random, calls] of [
    [1, 2],
    [0, 1],
  ] as const)
    it(`with spread 0.5 and Math.random() = ${random}: ${calls} call(s) 5 s in, every call within 10 s of the last`, async (t) => {
      // Fake time: the waits are the scheduled ones, not this machine's.
      t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: 1_000_000 });
      t.mock.method(Math, "random", () => random);
      const at: number[] = [];
      const ac = new AbortController();
      const done = periodic("resync", 10_000, async () => void at.push(Date.now()), silentLogger(), { spread: 0.5 }).start(ac.signal);
      await settle();
      assert.deepEqual(at, [1_000_000], "the first call at once");
      t.mock.timers.tick(5_000);
      await settle();
      assert.equal(at.length, calls);
      t.mock.timers.tick(5_000);
      await settle();
      // However the spread falls, a call comes within the period: 10 s after the first call, 2 or 3 calls.
      assert.ok(at.length >= 2, `${at.length} calls after 10 s`);
      for (let i = 1; i < at.length; i++) assert.ok(at[i]! - at[i - 1]! <= 10_000 && at[i]! - at[i - 1]! >= 5_000, `gap ${at[i]! - at[i - 1]!}`);
      ac.abort();
      await done;
    });
});
