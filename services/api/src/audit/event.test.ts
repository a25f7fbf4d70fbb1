import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { microTime } from "./event.js";

/** MicroTime formatted from scratch: the date's ISO text to the second, then six digits of microseconds. */
function reference(epochMicros: number): string {
  const iso = new Date(Math.floor(epochMicros / 1000)).toISOString();
  return `${iso.slice(0, 19)}.${String(Math.floor(epochMicros % 1_000_000)).padStart(6, "0")}Z`;
}

describe("microTime", () => {
  it("formats RFC 3339 with microseconds, across second, minute, day and year boundaries and back and forth between seconds", () => {
    assert.equal(microTime(Date.UTC(2026, 10, 26, 6, 44, 23) * 1000 + 123_456), "2026-11-26T06:44:23.123456Z");
    assert.equal(microTime(Date.UTC(2026, 10, 26, 6, 44, 23) * 1000 + 7), "2026-11-26T06:44:23.000007Z");
    const edges = [Date.UTC(2026, 11, 31, 23, 59, 59), Date.UTC(2026, 10, 27, 4, 59, 59), Date.UTC(2000, 1, 28, 23, 59, 59)];
    for (const edge of edges) {
      const base = edge * 1000;
      // The last and first microseconds of neighbouring seconds, in an order that leaves and comes back to a second.
      for (const t of [base + 999_999, base + 1_000_000, base + 999_998, base, base + 1_000_001, base + 2_000_000, base + 500_000]) {
        assert.equal(microTime(t), reference(t), String(t));
      }
    }
    for (let i = 0, t = Date.UTC(2026, 10, 27) * 1000; i < 2_000; i++, t += 1_234_567) assert.equal(microTime(t), reference(t));
  });
});
