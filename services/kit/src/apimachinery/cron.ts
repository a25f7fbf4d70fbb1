// Cron schedules as Kubernetes reads them (robfig/cron v3's standard parser,
// which both the api's CronJob validation and the CronJob controller use):
// five fields (minute hour day-of-month month day-of-week) with `*`, `?`,
// ranges, steps, lists and names (JAN…DEC, SUN…SAT), the descriptors
// (@yearly @annually @monthly @weekly @daily @midnight @hourly, @every <d>),
// an optional `TZ=` / `CRON_TZ=` prefix, and the next activation in an IANA
// time zone with robfig's behaviour across daylight-saving changes: a wall
// time skipped by spring-forward does not run that day; one repeated by
// fall-back runs twice. Time zones come from Intl (the ICU data in Node).

/** A schedule that can't be parsed; the message is robfig/cron's. */
export class CronParseError extends Error {}

/** A parsed schedule: `next(ms)` is the first activation strictly after `ms` (epoch ms), 0 when there is none within 5 years. */
export interface CronSchedule {
  next(ms: number): number;
}

interface Bounds {
  min: number;
  max: number;
  names?: Readonly<Record<string, number>>;
}

const MONTHS: Record<string, number> = { jan: 1, feb: 2, mar: 3, apr: 4, may: 5, jun: 6, jul: 7, aug: 8, sep: 9, oct: 10, nov: 11, dec: 12 };
const DAYS: Record<string, number> = { sun: 0, mon: 1, tue: 2, wed: 3, thu: 4, fri: 5, sat: 6 };
const FIELDS: readonly Bounds[] = [
  { min: 0, max: 59 },
  { min: 0, max: 23 },
  { min: 1, max: 31 },
  { min: 1, max: 12, names: MONTHS },
  { min: 0, max: 6, names: DAYS },
];
const DESCRIPTORS: Record<string, string> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

/** Go's `%s` of a string slice. */
const goSlice = (xs: readonly string[]): string => `[${xs.join(" ")}]`;

function parseInt10(expr: string): number {
  if (!/^[+-]?\d+$/.test(expr)) throw new CronParseError(`failed to parse int from ${expr}: strconv.Atoi: parsing ${JSON.stringify(expr)}: invalid syntax`);
  const n = Number(expr);
  if (n < 0) throw new CronParseError(`negative number (${n}) not allowed: ${expr}`);
  return n;
}

function parseIntOrName(expr: string, names: Bounds["names"]): number {
  const byName = names?.[expr.toLowerCase()];
  return byName ?? parseInt10(expr);
}

/** The values of one field; `star` when it was an unrestricted `*` or `?` (day-of-month and day-of-week then combine with AND, not OR). */
function parseField(field: string, b: Bounds): { bits: Set<number>; star: boolean } {
  const bits = new Set<number>();
  let star = false;
  for (const expr of field.split(",")) {
    const rangeAndStep = expr.split("/");
    const lowAndHigh = (rangeAndStep[0] ?? "").split("-");
    const single = lowAndHigh.length === 1;
    let start: number;
    let end: number;
    let isStar = false;
    if (lowAndHigh[0] === "*" || lowAndHigh[0] === "?") {
      start = b.min;
      end = b.max;
      isStar = true;
    } else {
      start = parseIntOrName(lowAndHigh[0] ?? "", b.names);
      if (lowAndHigh.length === 1) end = start;
      else if (lowAndHigh.length === 2) end = parseIntOrName(lowAndHigh[1] ?? "", b.names);
      else throw new CronParseError(`too many hyphens: ${expr}`);
    }
    let step = 1;
    if (rangeAndStep.length === 2) {
      step = parseInt10(rangeAndStep[1] ?? "");
      if (single) end = b.max;
      if (step > 1) isStar = false;
    } else if (rangeAndStep.length > 2) {
      throw new CronParseError(`too many slashes: ${expr}`);
    }
    if (start < b.min) throw new CronParseError(`beginning of range (${start}) below minimum (${b.min}): ${expr}`);
    if (end > b.max) throw new CronParseError(`end of range (${end}) above maximum (${b.max}): ${expr}`);
    if (start > end) throw new CronParseError(`beginning of range (${start}) beyond end of range (${end}): ${expr}`);
    if (step === 0) throw new CronParseError(`step of range should be a positive number: ${expr}`);
    for (let i = start; i <= end; i += step) bits.add(i);
    star ||= isStar;
  }
  return { bits, star };
}

/** Whether `zone` is a time zone Kubernetes accepts in `spec.timeZone`; the error message (Go's) otherwise. */
export function timeZoneError(zone: string): string | undefined {
  if (zone === "") return "timeZone must be nil or non-empty string";
  for (const part of zone.split("/")) {
    if (part === "." || part === ".." || part.startsWith("-") || !/^[A-Za-z.\-_0-9+]{1,14}$/.test(part)) return `unknown time zone ${zone}`;
  }
  if (zone.toLowerCase() === "local") return "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones";
  return knownZone(zone) ? undefined : `unknown time zone ${zone}`;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** A known IANA zone, spelled as the tz database does (Intl is case-insensitive, Go's LoadLocation is not). */
function knownZone(zone: string): boolean {
  try {
    const resolved = new Intl.DateTimeFormat("en-US", { timeZone: zone }).resolvedOptions().timeZone;
    return resolved === zone || resolved.toLowerCase() !== zone.toLowerCase();
  } catch {
    return false;
  }
}

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(zone, f);
  }
  return f;
}

/** The zone's offset from UTC at instant `ms`, in ms. */
export function zoneOffset(ms: number, zone: string): number {
  const p: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(new Date(ms))) if (part.type !== "literal") p[part.type] = Number(part.value);
  const local = Date.UTC(p["year"] ?? 1970, (p["month"] ?? 1) - 1, p["day"] ?? 1, p["hour"] ?? 0, p["minute"] ?? 0, p["second"] ?? 0);
  return local - Math.floor(ms / 1000) * 1000;
}

/** Wall-clock fields of `ms` in `zone`. */
export interface Wall {
  year: number;
  /** 1–12 */
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  /** 0 = Sunday */
  weekday: number;
}

export function wallClock(ms: number, zone: string): Wall {
  const d = new Date(ms + zoneOffset(ms, zone));
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
    weekday: d.getUTCDay(),
  };
}

/** Go's time.Date in a zone: fields normalized; a skipped or repeated wall time resolved as Go does. */
export function zonedDate(year: number, month: number, day: number, hour: number, minute: number, second: number, zone: string): number {
  const local = Date.UTC(year, month - 1, day, hour, minute, second);
  const o1 = zoneOffset(local, zone);
  const utc = local - o1;
  const o2 = zoneOffset(utc, zone);
  return o2 === o1 ? utc : local - o2;
}

class SpecSchedule implements CronSchedule {
  constructor(
    private readonly f: ReadonlyArray<{ bits: Set<number>; star: boolean }>,
    readonly zone: string,
  ) {}

  private has(i: number, v: number): boolean {
    return this.f[i]?.bits.has(v) ?? false;
  }

  private dayMatches(w: Wall): boolean {
    const dom = this.has(2, w.day);
    const dow = this.has(4, w.weekday);
    if (this.f[2]?.star || this.f[4]?.star) return dom && dow;
    return dom || dow;
  }

  // robfig/cron's SpecSchedule.Next, field by field from the month down,
  // wrapping to the month again when a smaller field rolls over.
  next(from: number): number {
    const z = this.zone;
    let t = Math.floor(from / 1000) * 1000 + 1000;
    let added = false;
    const yearLimit = wallClock(t, z).year + 5;
    wrap: for (;;) {
      let w = wallClock(t, z);
      if (w.year > yearLimit) return 0;
      while (!this.has(3, w.month)) {
        if (!added) {
          added = true;
          t = zonedDate(w.year, w.month, 1, 0, 0, 0, z);
          w = wallClock(t, z);
        }
        t = zonedDate(w.year, w.month + 1, w.day, w.hour, w.minute, w.second, z);
        w = wallClock(t, z);
        if (w.month === 1) continue wrap;
      }
      while (!this.dayMatches(w)) {
        if (!added) {
          added = true;
          t = zonedDate(w.year, w.month, w.day, 0, 0, 0, z);
          w = wallClock(t, z);
        }
        t = zonedDate(w.year, w.month, w.day + 1, w.hour, w.minute, w.second, z);
        w = wallClock(t, z);
        // Midnight moved by a DST change: back to midnight.
        if (w.hour !== 0) {
          t += (w.hour > 12 ? 24 - w.hour : -w.hour) * 3_600_000;
          w = wallClock(t, z);
        }
        if (w.day === 1) continue wrap;
      }
      while (!this.has(1, w.hour)) {
        if (!added) {
          added = true;
          t = zonedDate(w.year, w.month, w.day, w.hour, 0, 0, z);
        }
        t += 3_600_000;
        w = wallClock(t, z);
        if (w.hour === 0) continue wrap;
      }
      while (!this.has(0, w.minute)) {
        if (!added) {
          added = true;
          t = Math.floor(t / 60_000) * 60_000;
        }
        t += 60_000;
        w = wallClock(t, z);
        if (w.minute === 0) continue wrap;
      }
      // Seconds: the standard parser fixes them at 0.
      while (w.second !== 0) {
        if (!added) added = true;
        t += 1000;
        w = wallClock(t, z);
        if (w.second === 0) continue wrap;
      }
      return t;
    }
  }
}

class EverySchedule implements CronSchedule {
  constructor(private readonly delayMs: number) {}
  next(from: number): number {
    return from + this.delayMs - (from % 1000);
  }
}

const GO_UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go's time.ParseDuration, in ms. */
function parseGoDuration(s: string): number {
  const err = (): CronParseError => new CronParseError(`failed to parse duration ${s}: time: invalid duration ${JSON.stringify(s)}`);
  let rest = s;
  let sign = 1;
  if (rest.startsWith("-") || rest.startsWith("+")) {
    sign = rest.startsWith("-") ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === "0") return 0;
  if (rest === "") throw err();
  let total = 0;
  while (rest !== "") {
    const m = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/.exec(rest);
    if (!m) throw err();
    total += Number(m[1]) * (GO_UNITS[m[2] ?? ""] ?? 0);
    rest = rest.slice(m[0].length);
  }
  return sign * total;
}

/** The process's own zone: the controller's default when a CronJob names none (Kubernetes: kube-controller-manager's). */
export function localZone(): string {
  return new Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/**
 * Parses a schedule as robfig/cron's ParseStandard (throws CronParseError).
 * `zone` applies unless the spec starts with `TZ=` or `CRON_TZ=`.
 */
export function parseCronSchedule(spec: string, zone: string = localZone()): CronSchedule {
  let s = spec.trim();
  if (s === "") throw new CronParseError("empty spec string");
  if (s.startsWith("TZ=") || s.startsWith("CRON_TZ=")) {
    const i = s.indexOf(" ");
    const name = s.slice(s.indexOf("=") + 1, i < 0 ? undefined : i);
    if (!knownZone(name)) throw new CronParseError(`provided bad location ${name}: unknown time zone ${name}`);
    zone = name;
    s = i < 0 ? "" : s.slice(i).trim();
  }
  if (s.startsWith("@")) {
    if (s.startsWith("@every ")) {
      const ms = parseGoDuration(s.slice("@every ".length));
      return new EverySchedule(ms < 1000 ? 1000 : Math.floor(ms / 1000) * 1000);
    }
    const d = DESCRIPTORS[s];
    if (!d) throw new CronParseError(`unrecognized descriptor: ${s}`);
    s = d;
  }
  const fields = s.split(/\s+/).filter((x) => x !== "");
  if (fields.length !== 5) throw new CronParseError(`expected exactly 5 fields, found ${fields.length}: ${goSlice(fields)}`);
  return new SpecSchedule(
    fields.map((f, i) => parseField(f, FIELDS[i] as Bounds)),
    zone,
  );
}
