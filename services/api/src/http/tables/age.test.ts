import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { between, humanDuration, since } from "./age.js";

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;
const Y = 365 * D;

describe("humanDuration", () => {
  const cases: [number, string][] = [
    [0, "0s"],
    [-500, "0s"],
    [-5 * S, "<invalid>"],
    [45 * S, "45s"],
    [119 * S, "119s"],
    [2 * M, "2m"],
    [5 * M + 10 * S, "5m10s"],
    [10 * M, "10m"],
    [95 * M, "95m"],
    [3 * H, "3h"],
    [3 * H + 5 * M, "3h5m"],
    [8 * H, "8h"],
    [30 * H, "30h"],
    [2 * D, "2d"],
    [2 * D + 3 * H, "2d3h"],
    [8 * D, "8d"],
    [45 * D, "45d"],
    [2 * Y, "2y"],
    [2 * Y + 30 * D, "2y30d"],
    [9 * Y, "9y"],
  ];
  for (const [ms, want] of cases) it(`${ms} ms → ${want}`, () => assert.equal(humanDuration(ms), want));
});

describe("since and between", () => {
  const now = Date.parse("2026-01-01T00:10:00Z");
  it("ages a timestamp", () => assert.equal(since("2026-01-01T00:00:00Z", now), "10m"));
  it("unset or bad timestamps are <unknown>", () => {
    assert.equal(since(undefined, now), "<unknown>");
    assert.equal(since("nope", now), "<unknown>");
  });
  it("durations run to the end, or to now", () => {
    assert.equal(between("2026-01-01T00:00:00Z", "2026-01-01T00:00:30Z", now), "30s");
    assert.equal(between("2026-01-01T00:09:00Z", undefined, now), "60s");
    assert.equal(between(undefined, undefined, now), "");
  });
});
