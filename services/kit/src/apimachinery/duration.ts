/**
 * kubectl's age format (k8s.io/apimachinery/pkg/util/duration.HumanDuration):
 * `45s`, `5m10s`, `42m`, `3h20m`, `20h`, `2d3h`, `10d`, `2y30d`, `9y`.
 * Up to one second in the future reads `0s` (clock skew); more is `<invalid>`.
 */
export function humanDuration(ms: number): string {
  if (Number.isNaN(ms)) return "<invalid>";
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${days}d` : `${days}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.floor(days / 365);
  if (hours < 24 * 365 * 8) {
    const d = days % 365;
    return d === 0 ? `${years}y` : `${years}y${d}d`;
  }
  return `${years}y`;
}

/** The age of a timestamp as kubectl prints it; `<unknown>` without one (or if unparsable). */
export function ageOf(rfc3339: string | undefined, now: number = Date.now()): string {
  if (!rfc3339) return "<unknown>";
  const t = Date.parse(rfc3339);
  return Number.isNaN(t) ? "<unknown>" : humanDuration(now - t);
}

/** The second last formatted by nowRfc3339, and its text: most calls come within the same second (0.5 % of the api's busy time formatted anew each time). */
let rfc3339Second = Number.NaN;
let rfc3339Text = "";

/** An RFC 3339 UTC timestamp with second precision (`2026-01-02T03:04:05Z`); now by default. */
export function nowRfc3339(ms: number = Date.now()): string {
  const second = Math.floor(ms / 1000);
  if (second !== rfc3339Second) {
    rfc3339Text = new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
    rfc3339Second = second;
  }
  return rfc3339Text;
}
