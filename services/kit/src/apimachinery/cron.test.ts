import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CronParseError, parseCronSchedule, timeZoneError, zonedDate } from "./cron.js";

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number): string => new Date(ms).toISOString().replace(".000Z", "Z");
/** The next `n` activations after `from`, as UTC ISO strings. */
function nexts(spec: string, from: string, n: number, zone = "UTC"): string[] {
  const s = parseCronSchedule(spec, zone);
  const out: string[] = [];
  let t = at(from);
  for (let i = 0; i < n; i++) {
    t = s.next(t);
    out.push(iso(t));
  }
  return out;
}

describe("cron schedules (robfig/cron's standard parser)", () => {
  it("steps, ranges, lists and the next minute strictly after", () => {
    assert.deepEqual(nexts("*/15 * * * *", "2026-11-25T10:07:30Z", 3), ["2026-11-25T10:15:00Z", "2026-11-25T10:30:00Z", "2026-11-25T10:45:00Z"]);
    assert.deepEqual(nexts("*/1 * * * *", "2026-11-25T10:15:00Z", 2), ["2026-11-25T10:16:00Z", "2026-11-25T10:17:00Z"]);
    assert.deepEqual(nexts("5,10-12 * * * *", "2026-11-25T10:06:00Z", 4), [
      "2026-11-25T10:10:00Z",
      "2026-11-25T10:11:00Z",
      "2026-11-25T10:12:00Z",
      "2026-11-25T11:05:00Z",
    ]);
    assert.deepEqual(nexts("10-40/15 3 * * *", "2026-11-25T10:00:00Z", 3), ["2026-11-26T03:10:00Z", "2026-11-26T03:25:00Z", "2026-11-26T03:40:00Z"]);
    // a/n is a..max/n
    assert.deepEqual(nexts("50/5 * * * *", "2026-11-25T10:00:00Z", 3), ["2026-11-25T10:50:00Z", "2026-11-25T10:55:00Z", "2026-11-25T11:50:00Z"]);
  });

  it("month and weekday names, case-insensitive; day-of-month OR day-of-week unless one is *", () => {
    // 2026-11-25 is a Wednesday.
    assert.deepEqual(nexts("0 9 * * mon-FRI", "2026-11-27T10:00:00Z", 2), ["2026-11-30T09:00:00Z", "2026-12-01T09:00:00Z"]);
    assert.deepEqual(nexts("0 0 1 JAN *", "2026-11-25T10:00:00Z", 1), ["2027-01-01T00:00:00Z"]);
    assert.deepEqual(nexts("0 0 13 * FRI", "2026-11-25T10:00:00Z", 3), ["2026-11-27T00:00:00Z", "2026-12-04T00:00:00Z", "2026-12-11T00:00:00Z"]);
    assert.deepEqual(nexts("0 0 13 * *", "2026-11-25T10:00:00Z", 1), ["2026-12-13T00:00:00Z"]);
    assert.deepEqual(nexts("0 0 ? * SUN", "2026-11-25T10:00:00Z", 1), ["2026-11-29T00:00:00Z"]);
  });

  it("descriptors", () => {
    const from = "2026-11-25T10:07:00Z";
    assert.deepEqual(nexts("@hourly", from, 1), ["2026-11-25T11:00:00Z"]);
    assert.deepEqual(nexts("@daily", from, 1), ["2026-11-26T00:00:00Z"]);
    assert.deepEqual(nexts("@midnight", from, 1), ["2026-11-26T00:00:00Z"]);
    assert.deepEqual(nexts("@weekly", from, 1), ["2026-11-29T00:00:00Z"]);
    assert.deepEqual(nexts("@monthly", from, 1), ["2026-12-01T00:00:00Z"]);
    assert.deepEqual(nexts("@yearly", from, 1), ["2027-01-01T00:00:00Z"]);
    assert.deepEqual(nexts("@annually", from, 1), ["2027-01-01T00:00:00Z"]);
    assert.deepEqual(nexts("@every 90s", "2026-11-25T10:07:00.500Z", 2), ["2026-11-25T10:08:30Z", "2026-11-25T10:10:00Z"]);
  });

  it("a time zone: wall-clock times there", () => {
    assert.deepEqual(nexts("0 9 * * *", "2026-11-25T10:00:00Z", 1, "Europe/Berlin"), ["2026-11-26T08:00:00Z"]);
    assert.deepEqual(nexts("0 9 * * *", "2026-07-01T10:00:00Z", 1, "America/New_York"), ["2026-07-01T13:00:00Z"]);
    assert.deepEqual(nexts("TZ=Asia/Tokyo 0 9 * * *", "2026-11-25T10:00:00Z", 1), ["2026-11-26T00:00:00Z"]);
    assert.deepEqual(nexts("CRON_TZ=Asia/Tokyo 0 9 * * *", "2026-11-25T10:00:00Z", 1, "Europe/Berlin"), ["2026-11-26T00:00:00Z"]);
  });

  it("spring forward in Europe/Berlin: 02:30 does not exist on 2026-03-29 and does not run that day", () => {
    // CET (UTC+1) until 2026-03-29 01:00Z, then CEST (UTC+2).
    assert.deepEqual(nexts("30 2 * * *", "2026-03-28T01:30:00Z", 2, "Europe/Berlin"), ["2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"]);
    // Hourly across the gap: 01:00 CET, then 03:00 CEST.
    assert.deepEqual(nexts("0 * * * *", "2026-03-29T00:00:00Z", 2, "Europe/Berlin"), ["2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"]);
  });

  it("fall back in Europe/Berlin: 02:30 happens twice on 2026-10-25 and runs twice", () => {
    assert.deepEqual(nexts("30 2 * * *", "2026-10-24T00:30:00Z", 3, "Europe/Berlin"), [
      "2026-10-25T00:30:00Z", // 02:30 CEST
      "2026-10-25T01:30:00Z", // 02:30 CET
      "2026-10-26T01:30:00Z",
    ]);
    // Midnight stays midnight over the change.
    assert.deepEqual(nexts("0 0 * * *", "2026-10-24T12:00:00Z", 2, "Europe/Berlin"), ["2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z"]);
  });

  it("spring forward in America/New_York", () => {
    // 2026-03-08 02:00 EST → 03:00 EDT.
    assert.deepEqual(nexts("0 * * * *", "2026-03-08T06:00:00Z", 2, "America/New_York"), ["2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"]);
    assert.deepEqual(nexts("15 2 * * *", "2026-03-07T08:00:00Z", 1, "America/New_York"), ["2026-03-09T06:15:00Z"]);
  });

  it("Go's time.Date for a skipped wall time lands after the gap", () => {
    assert.equal(iso(zonedDate(2026, 3, 29, 2, 30, 0, "Europe/Berlin")), "2026-03-29T01:30:00Z");
    assert.equal(iso(zonedDate(2026, 1, 32, 0, 0, 0, "UTC")), "2026-02-01T00:00:00Z");
  });

  it("refuses what robfig/cron refuses, with its messages", () => {
    const cases: Array<[string, string]> = [
      ["", "empty spec string"],
      ["* * * *", "expected exactly 5 fields, found 4: [* * * *]"],
      ["* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"],
      ["60 * * * *", "end of range (60) above maximum (59): 60"],
      ["* 24 * * *", "end of range (24) above maximum (23): 24"],
      ["* * 0 * *", "beginning of range (0) below minimum (1): 0"],
      ["* * * 13 *", "end of range (13) above maximum (12): 13"],
      ["* * * * 7", "end of range (7) above maximum (6): 7"],
      ["5-3 * * * *", "beginning of range (5) beyond end of range (3): 5-3"],
      ["*/0 * * * *", "step of range should be a positive number: */0"],
      ["1-2-3 * * * *", "too many hyphens: 1-2-3"],
      ["*/2/3 * * * *", "too many slashes: */2/3"],
      ["x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'],
      ["* * * FOO *", 'failed to parse int from FOO: strconv.Atoi: parsing "FOO": invalid syntax'],
      ["@fortnightly", "unrecognized descriptor: @fortnightly"],
      ["TZ=Mars/Olympus * * * * *", "provided bad location Mars/Olympus: unknown time zone Mars/Olympus"],
    ];
    for (const [spec, message] of cases)
      assert.throws(
        () => parseCronSchedule(spec, "UTC"),
        (e: unknown) => e instanceof CronParseError && e.message === message,
        spec,
      );
  });

  it("time zones as Kubernetes accepts them", () => {
    assert.equal(timeZoneError("Europe/Berlin"), undefined);
    assert.equal(timeZoneError("UTC"), undefined);
    assert.equal(timeZoneError("America/Argentina/Buenos_Aires"), undefined);
    assert.equal(timeZoneError("Mars/Olympus"), "unknown time zone Mars/Olympus");
    assert.equal(timeZoneError("europe/berlin"), "unknown time zone europe/berlin");
    assert.equal(timeZoneError("../etc/passwd"), "unknown time zone ../etc/passwd");
    assert.equal(timeZoneError("Local"), "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones");
    assert.equal(timeZoneError(""), "timeZone must be nil or non-empty string");
  });
});
