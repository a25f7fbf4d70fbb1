// When a CronJob should run (pure): the most recent unmet schedule time, how
// many were missed, and how long to sleep until the next one — Kubernetes'
// cronjob controller (utils.go: mostRecentScheduleTime, nextScheduleTime,
// nextScheduleTimeDuration) over kit's cron schedules. Times are epoch ms.
import { zoneOffset, type CronSchedule } from "@choreo/kit/apimachinery";
import type { CronJob } from "@choreo/kit/gen/choreo/batch/v1/batch";

/** A CronJob that fell this many schedule times behind gets a TooManyMissedTimes warning. */
export const MANY_MISSED = 100;
/** Requeue a little after the schedule time, so that the time has surely come (Kubernetes' nextScheduleDelta). */
export const NEXT_SCHEDULE_DELTA_MS = 100;

export interface ScheduleTimes {
  /** Where the search started: the last schedule time, the creation, or now − startingDeadlineSeconds. */
  earliest: number;
  /** The most recent schedule time in (earliest, now], if any. */
  mostRecent?: number;
  missed: "none" | "few" | "many";
}

const parseTime = (s: string | undefined): number | undefined => {
  if (!s) return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : t;
};

/** Throws when two consecutive schedule times are less than a second apart (an impossible schedule like `0 0 30 2 *`). */
export function mostRecentScheduleTime(cj: CronJob, nowMs: number, schedule: CronSchedule, includeStartingDeadline: boolean): ScheduleTimes {
  let earliest = parseTime(cj.status?.lastScheduleTime) ?? parseTime(cj.metadata?.creationTimestamp) ?? nowMs;
  const deadline = cj.spec?.startingDeadlineSeconds;
  if (includeStartingDeadline && deadline !== undefined) earliest = Math.max(earliest, nowMs - deadline * 1000);

  const t1 = schedule.next(earliest);
  const t2 = schedule.next(t1);
  if (nowMs < t1) return { earliest, missed: "none" };
  if (nowMs < t2) return { earliest, mostRecent: t1, missed: "none" };

  const between = Math.round((t2 - t1) / 1000);
  if (between < 1) throw new Error("time difference between two schedules is less than 1 second");
  // A rough count of the schedule times since t1, then the exact ones from a little before the last.
  const elapsed = Math.trunc((nowMs - t1) / 1000);
  const missedCount = Math.trunc(elapsed / between) + 1;
  const potentialEarliest = t1 + (missedCount - 2) * between * 1000;
  let mostRecent: number | undefined;
  for (let t = schedule.next(potentialEarliest); t !== 0 && t <= nowMs; t = schedule.next(t)) mostRecent = t;
  const missed = missedCount > MANY_MISSED ? "many" : missedCount > 0 ? "few" : "none";
  return mostRecent === undefined ? { earliest, missed } : { earliest, mostRecent, missed };
}

/** The schedule time to run now, if one is unmet (within the starting deadline). */
export function nextScheduleTime(cj: CronJob, nowMs: number, schedule: CronSchedule): { time?: number; missed: ScheduleTimes["missed"] } {
  const r = mostRecentScheduleTime(cj, nowMs, schedule, true);
  if (r.mostRecent === undefined || r.mostRecent > nowMs) return { missed: r.missed };
  return { time: r.mostRecent, missed: r.missed };
}

/** Milliseconds until the next schedule time (plus the delta); undefined for a schedule that never fires. */
export function nextScheduleDelay(cj: CronJob, nowMs: number, schedule: CronSchedule): number | undefined {
  let r: ScheduleTimes;
  try {
    r = mostRecentScheduleTime(cj, nowMs, schedule, false);
  } catch {
    return undefined;
  }
  const from = r.mostRecent ?? (r.missed === "none" ? r.earliest : nowMs);
  const next = schedule.next(from);
  return next === 0 ? undefined : next + NEXT_SCHEDULE_DELTA_MS - nowMs;
}

/** The Job of a schedule time: `<cronjob>-<minutes since the epoch>`, the same name on every try (the lock against duplicates). */
export function jobName(cronJobName: string, scheduledMs: number): string {
  return `${cronJobName}-${Math.floor(scheduledMs / 60_000)}`;
}

const pad = (n: number, w = 2): string => String(Math.abs(n)).padStart(w, "0");

/** RFC 3339 of `ms` in `zone` (Go's Format(time.RFC3339) of t.In(zone)): `2026-11-25T11:15:00+01:00`, `…Z` in UTC. */
export function rfc3339In(ms: number, zone: string): string {
  const off = zoneOffset(ms, zone);
  const d = new Date(Math.floor(ms / 1000) * 1000 + off);
  const date = `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  if (off === 0) return `${date}Z`;
  const m = Math.round(Math.abs(off) / 60_000);
  return `${date}${off < 0 ? "-" : "+"}${pad(Math.floor(m / 60))}:${pad(m % 60)}`;
}

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** Go's time.RFC1123Z of a UTC time, as the MissSchedule event prints it: `Wed, 25 Nov 2026 10:15:00 +0000`. */
export function rfc1123z(ms: number): string {
  const d = new Date(ms);
  return `${DAYS[d.getUTCDay()]}, ${pad(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000`;
}
