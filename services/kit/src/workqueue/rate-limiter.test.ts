import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { bucketRateLimiter, defaultControllerRateLimiter, exponentialBackoff, maxOf } from "./index.js";

describe("rate limiters", () => {
  it("exponentialBackoff doubles per failure up to the cap, per key", () => {
    const l = exponentialBackoff(5, 1000);
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7, 8, 9].map(() => l.when("a")),
      [5, 10, 20, 40, 80, 160, 320, 640, 1000],
    );
    assert.equal(l.when("b"), 5);
    assert.equal(l.numRequeues("a"), 9);
    l.forget("a");
    assert.equal(l.numRequeues("a"), 0);
    assert.equal(l.when("a"), 5);
    const big = exponentialBackoff(5, 1000 * 1000);
    for (let i = 0; i < 2000; i++) big.when("x");
    assert.equal(big.when("x"), 1000 * 1000, "no overflow past the cap");
  });

  it("bucketRateLimiter allows a burst, then qps (fake clock)", () => {
    let now = 0;
    const l = bucketRateLimiter(10, 3, () => now);
    assert.deepEqual([l.when("a"), l.when("b"), l.when("c")], [0, 0, 0]);
    assert.equal(l.when("d"), 100);
    assert.equal(l.when("e"), 200);
    now = 1000; // +10 tokens, capped at the burst, minus 2 reserved
    assert.equal(l.when("f"), 0);
    assert.equal(l.numRequeues("a"), 0);
  });

  it("maxOf takes the longest delay and forgets in all", () => {
    const l = maxOf(
      exponentialBackoff(5, 1000),
      bucketRateLimiter(1, 1, () => 0),
    );
    assert.equal(l.when("a"), 5);
    assert.equal(l.when("a"), 1000); // bucket empty: 1 token per second
    assert.equal(l.numRequeues("a"), 2);
    l.forget("a");
    assert.equal(l.numRequeues("a"), 0);
  });

  it("defaultControllerRateLimiter starts at 5 ms", () => {
    const l = defaultControllerRateLimiter();
    assert.equal(l.when("a"), 5);
    assert.equal(l.when("a"), 10);
    assert.equal(l.when("b"), 5);
  });
});
