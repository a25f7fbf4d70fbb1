import type { Logger } from "./logger.js";

/** Options of {@link FailureLog}. */
export interface FailureLogOptions {
  /** The window a failure's budget and its summary cover (default 30 s). */
  windowMs?: number;
  /** Whole lines (error and stack) one kind of failure may write per window, over all its subjects (default 5). */
  wholePerWindow?: number;
  /** The clock (tests). */
  now?: () => number;
  /**
   * Schedules the end of a window (tests); default an unref'd `setTimeout`. Returns a cancel function.
   */
  schedule?: (fn: () => void, ms: number) => () => void;
}

/** What one kind of failure (its constant message) went through in the current window. */
interface Kind {
  level: "warn" | "error";
  /** Whole lines written this window. */
  whole: number;
  /** Failures counted but not written this window. */
  counted: number;
  /** The subjects of the counted failures (up to {@link MAX_SUBJECTS_COUNTED}). */
  subjects: Set<string>;
  /** The last counted failure: its subject, error and fields. */
  last?: { subject: string; err: unknown; fields: Record<string, unknown> };
  /** Recoveries counted but not written this window. */
  recovered: number;
  /** Recovery lines written this window. */
  recoveredWhole: number;
}

/** A subject's failing streak. */
interface Streak {
  since: number;
  failures: number;
  /** When the streak last wrote a whole line, and its message. */
  wroteAt: number;
  wrote: string;
  lastAt: number;
}

const MAX_SUBJECTS_COUNTED = 100_000;
/** A streak not heard of for this many windows is forgotten (its subject went away failing). */
const FORGET_AFTER_WINDOWS = 10;

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function briefOf(err: unknown): { type: string; message: string } {
  return { type: err instanceof Error ? err.name : typeof err, message: messageOf(err) };
}

/**
 * Logs repeated failures without flooding: one process's many subjects (the
 * hollow nodes of a process, the pods of a node, the keys of a controller)
 * failing the same way at once — the api or the bus away — write a few whole
 * lines (error and stack) and then one summary a window, not a line with a
 * stack per subject per retry.
 *
 * A failure is named by its constant message (`what`, "periodic task
 * failed") and the thing that failed (`subject`, a node or an object key).
 * It is written whole when its subject's streak has not written this error
 * message within the window and the kind's budget for the window
 * (`wholePerWindow`) is not spent; otherwise it is counted. At the end of a
 * window that counted something, one line `failures summarised` gives the
 * kind (`of`), how many failures and subjects were counted, the last
 * subject, fields and error (`lastError`: type and message, no stack). A subject that
 * succeeds after failing ends its streak: `recovered(what, subject)` writes
 * `recovered` (`of`: what) with how long and how many failures, under the same
 * budget (the rest are counted in the summary).
 */
export class FailureLog {
  private readonly windowMs: number;
  private readonly budget: number;
  private readonly now: () => number;
  private readonly schedule: (fn: () => void, ms: number) => () => void;
  private readonly kinds = new Map<string, Kind>();
  private readonly streaks = new Map<string, Map<string, Streak>>();
  private cancel: (() => void) | undefined;
  private windowStart: number;

  constructor(
    private readonly log: Logger,
    opts: FailureLogOptions = {},
  ) {
    this.windowMs = opts.windowMs ?? 30_000;
    this.budget = opts.wholePerWindow ?? 5;
    this.now = opts.now ?? Date.now;
    this.schedule =
      opts.schedule ??
      ((fn, ms) => {
        const t = setTimeout(fn, ms);
        t.unref();
        return () => clearTimeout(t);
      });
    this.windowStart = this.now();
  }

  /**
   * Records a failure of `subject`: writes it whole on `log` (a child logger carrying the subject's own fields, or
   * the digest's) or counts it. `fields` go on the line beside `err`.
   */
  failed(what: string, subject: string, err: unknown, fields: Record<string, unknown> = {}, log?: Logger, level: "warn" | "error" = "warn"): void {
    const now = this.now();
    this.roll(now);
    const kind = this.kindOf(what, level);
    let streaks = this.streaks.get(what);
    if (!streaks) this.streaks.set(what, (streaks = new Map()));
    let s = streaks.get(subject);
    if (!s) streaks.set(subject, (s = { since: now, failures: 0, wroteAt: -Infinity, wrote: "", lastAt: now }));
    s.failures++;
    s.lastAt = now;
    const message = messageOf(err);
    const repeat = s.wrote === message && now - s.wroteAt < this.windowMs;
    if (!repeat && kind.whole < this.budget) {
      kind.whole++;
      s.wroteAt = now;
      s.wrote = message;
      (log ?? this.log)[level]({ ...fields, err, failures: s.failures }, what);
      return;
    }
    kind.counted++;
    if (kind.subjects.size < MAX_SUBJECTS_COUNTED) kind.subjects.add(subject);
    kind.last = { subject, err, fields };
    this.arm();
  }

  /** Ends `subject`'s failing streak, if it had one, with a line `recovered` (`of`: what; or a count in the summary). */
  recovered(what: string, subject: string, fields: Record<string, unknown> = {}, log?: Logger): void {
    const s = this.streaks.get(what)?.get(subject);
    if (!s) return;
    this.streaks.get(what)?.delete(subject);
    const now = this.now();
    this.roll(now);
    const kind = this.kindOf(what, "warn");
    if (kind.recoveredWhole < this.budget) {
      kind.recoveredWhole++;
      (log ?? this.log).info({ ...fields, of: what, failures: s.failures, failingMs: now - s.since }, "recovered");
      return;
    }
    kind.recovered++;
    this.arm();
  }

  /** Whether `subject` is in a failing streak of `what`. */
  failing(what: string, subject: string): boolean {
    return this.streaks.get(what)?.has(subject) ?? false;
  }

  /** Writes what is counted now and stops the window's timer. */
  flush(): void {
    this.cancel?.();
    this.cancel = undefined;
    this.summarise(this.now());
  }

  private kindOf(what: string, level: "warn" | "error"): Kind {
    let kind = this.kinds.get(what);
    if (!kind) {
      kind = { level, whole: 0, counted: 0, subjects: new Set(), recovered: 0, recoveredWhole: 0 };
      this.kinds.set(what, kind);
    }
    return kind;
  }

  /** Ends the window if it is over (the timer may be late, or absent when nothing was counted). */
  private roll(now: number): void {
    if (now - this.windowStart >= this.windowMs) {
      this.cancel?.();
      this.cancel = undefined;
      this.summarise(now);
    }
  }

  private arm(): void {
    if (this.cancel) return;
    const left = Math.max(0, this.windowStart + this.windowMs - this.now());
    this.cancel = this.schedule(() => {
      this.cancel = undefined;
      this.summarise(this.now());
    }, left);
  }

  private summarise(now: number): void {
    for (const [what, k] of this.kinds) {
      if (k.counted > 0 || k.recovered > 0) {
        const last = k.last;
        this.log[k.counted > 0 ? k.level : "info"](
          {
            ...(last?.fields ?? {}),
            of: what,
            failures: k.counted,
            subjects: k.subjects.size,
            recovered: k.recovered,
            ...(last ? { lastSubject: last.subject, lastError: briefOf(last.err) } : {}),
            windowMs: now - this.windowStart,
          },
          "failures summarised",
        );
      }
      k.whole = 0;
      k.counted = 0;
      k.subjects = new Set();
      k.last = undefined;
      k.recovered = 0;
      k.recoveredWhole = 0;
    }
    for (const [what, streaks] of this.streaks) {
      for (const [subject, s] of streaks) if (now - s.lastAt > FORGET_AFTER_WINDOWS * this.windowMs) streaks.delete(subject);
      if (streaks.size === 0) this.streaks.delete(what);
    }
    this.windowStart = now;
  }
}
