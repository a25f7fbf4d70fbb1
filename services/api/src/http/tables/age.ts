// Ages as kubectl prints them in tables; the duration format itself is the kit's.
import { humanDuration } from "@choreo/kit/apimachinery";

export { humanDuration };

/** kubectl's translateTimestampSince: the age of an RFC 3339 time, `<unknown>` when unset or unparsable. */
export function since(timestamp: unknown, now: number): string {
  if (typeof timestamp !== "string" || timestamp === "") return "<unknown>";
  const t = Date.parse(timestamp);
  return Number.isNaN(t) ? "<unknown>" : humanDuration(now - t);
}

/** The duration between two RFC 3339 times (end defaults to now), or `""` without a start. */
export function between(start: unknown, end: unknown, now: number): string {
  if (typeof start !== "string" || start === "") return "";
  const s = Date.parse(start);
  if (Number.isNaN(s)) return "";
  const e = typeof end === "string" && end !== "" ? Date.parse(end) : now;
  return humanDuration((Number.isNaN(e) ? now : e) - s);
}
