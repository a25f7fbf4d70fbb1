import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { ageOf, humanDuration, nowRfc3339 } from "./duration.js";

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

describe("durations", () => {
  it("print like k8s.io/apimachinery/pkg/util/duration.HumanDuration", () => {
    const cases: [number, string][] = [
      [0, "0s"],
      [999, "0s"],
      [S, "1s"],
      [45 * S, "45s"],
      [70 * S, "70s"],
      [119 * S, "119s"],
      [120 * S, "2m"],
      [190 * S, "3m10s"],
      [5 * M + 10 * S, "5m10s"],
      [10 * M + 10 * S, "10m"],
      [70 * M, "70m"],
      [179 * M, "179m"],
      [3 * H, "3h"],
      [3 * H + 20 * M, "3h20m"],
      [8 * H + 20 * M, "8h"],
      [47 * H, "47h"],
      [49 * H, "2d1h"],
      [2 * D + 3 * H, "2d3h"],
      [3 * D, "3d"],
      [(8 * 24 + 2) * H, "8d"],
      [10 * D, "10d"],
      [367 * D, "367d"],
      [(365 * 2 * 24 + 25) * H, "2y1d"],
      [(365 * 2 + 30) * D, "2y30d"],
      [(365 * 8 * 24 + 2) * H, "8y"],
      [-S, "0s"],
      [-1500, "0s"],
      [-2 * S, "<invalid>"],
      [Number.NaN, "<invalid>"],
    ];
    for (const [ms, want] of cases) assert.equal(humanDuration(ms), want, `${ms}ms`);
  });

  it("always print a well-formed duration (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: -1000, max: 20 * 365 * D }), (ms) => {
        assert.match(humanDuration(ms), /^(\d+y)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?$/);
        assert.notEqual(humanDuration(ms), "");
      }),
      { seed: 17, numRuns: 500 },
    );
  });

  it("ages of timestamps", () => {
    const now = Date.parse("2026-01-02T03:04:05Z");
    assert.equal(ageOf(undefined, now), "<unknown>");
    assert.equal(ageOf("", now), "<unknown>");
    assert.equal(ageOf("not a time", now), "<unknown>");
    assert.equal(ageOf("2026-01-02T03:04:00Z", now), "5s");
    assert.equal(ageOf("2026-01-01T03:04:05Z", now), "24h");
    assert.equal(ageOf("2025-12-30T00:04:05Z", now), "3d3h");
  });

  it("RFC 3339 timestamps with second precision", () => {
    assert.equal(nowRfc3339(Date.parse("2026-01-02T03:04:05.678Z")), "2026-01-02T03:04:05Z");
    assert.match(nowRfc3339(), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    // The last second's text is kept: within it, across it, back to an earlier one, before 1970.
    const t = Date.parse("2026-01-02T03:04:05Z");
    assert.equal(nowRfc3339(t + 999), "2026-01-02T03:04:05Z");
    assert.equal(nowRfc3339(t + 1000), "2026-01-02T03:04:06Z");
    assert.equal(nowRfc3339(t - 1), "2026-01-02T03:04:04Z");
    assert.equal(nowRfc3339(t), "2026-01-02T03:04:05Z");
    assert.equal(nowRfc3339(-1500), "1969-12-31T23:59:58Z");
    assert.equal(nowRfc3339(-1000), "1969-12-31T23:59:59Z");
    assert.throws(() => nowRfc3339(Number.NaN), RangeError);
  });
});
