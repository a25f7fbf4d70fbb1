// kubectl's age format (k8s.io/apimachinery/pkg/util/duration.HumanDuration).
// The kit has the same function; this copy keeps the tables free of it while
// both settle.

/**
 * A duration as kubectl prints ages: `45s`, `5m10s`, `95m`, `3h5m`, `30h`,
 * `2d3h`, `45d`, `2y30d`, `9y`. Up to one second in the future reads `0s`
 * (clock skew); more is `<invalid>`.
 */
export function humanDuration(ms: number): string {
  if (Number.isNaN(ms)) return "<invalid>";
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return withRest(minutes, "m", seconds % 60, "s");
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return withRest(hours, "h", minutes % 60, "m");
  if (hours < 48) return `${hours}h`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 8) return withRest(days, "d", hours % 24, "h");
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.floor(days / 365);
  if (hours < 24 * 365 * 8) return withRest(years, "y", days % 365, "d");
  return `${years}y`;
}

function withRest(n: number, unit: string, rest: number, restUnit: string): string {
  return rest === 0 ? `${n}${unit}` : `${n}${unit}${rest}${restUnit}`;
}

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
