import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApiError } from "@choreo/kit";
import { LogWatermark } from "./log-watermark.js";

/** A watch cache reduced to what the watermark reads: revisions appended by the test. */
function fakeCache() {
  let last = 0;
  let wake: (() => void) | undefined;
  return {
    ready: Promise.resolve(),
    get lastRevision() {
      return last;
    },
    append(rev: number) {
      last = rev;
      wake?.();
    },
    async *since(from: number, signal: AbortSignal): AsyncGenerator<{ revision: number }, "expired" | "aborted"> {
      let cursor = from;
      while (!signal.aborted) {
        while (cursor < last) yield { revision: ++cursor };
        await new Promise<void>((r) => {
          wake = r;
          signal.addEventListener("abort", () => r(), { once: true });
        });
      }
      return "aborted";
    },
  };
}

describe("LogWatermark", () => {
  it("answers at once before it runs (the api's bootstrap writes), then once the log holds the revision", async () => {
    const cache = fakeCache();
    const w = new LogWatermark(cache as never, 5_000);
    await w.reached(99); // not running: no wait
    const ac = new AbortController();
    const running = w.start(ac.signal);
    await new Promise((r) => setImmediate(r));
    assert.equal(w.running, true);
    let done = false;
    const p = w.reached(3).then(() => (done = true));
    cache.append(2);
    await new Promise((r) => setImmediate(r));
    assert.equal(done, false, "revision 2 is not 3");
    cache.append(3);
    await p;
    assert.equal(w.revision, 3);
    await w.reached(1); // already seen
    ac.abort();
    await running;
  });

  it("a revision the log does not confirm in time → 504 Timeout; stopping rejects the waiters with 503", async () => {
    const cache = fakeCache();
    const w = new LogWatermark(cache as never, 50);
    const ac = new AbortController();
    const running = w.start(ac.signal);
    await new Promise((r) => setImmediate(r));
    await assert.rejects(
      w.reached(10),
      (e: unknown) => e instanceof ApiError && e.status.code === 504 && /did not confirm it within 50 ms/.test(e.status.message),
    );
    const slow = new LogWatermark(cache as never, 60_000);
    const ac2 = new AbortController();
    const running2 = slow.start(ac2.signal);
    await new Promise((r) => setImmediate(r));
    const pending = slow.reached(1000);
    ac2.abort();
    await assert.rejects(pending, (e: unknown) => e instanceof ApiError && e.status.code === 503);
    await running2;
    ac.abort();
    await running;
  });
});
