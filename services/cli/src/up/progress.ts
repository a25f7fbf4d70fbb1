// `choreo up`'s progress: one line per step, like an installer.
//
// On a terminal the running step is one line redrawn in place (a spinner, the
// step's title, what it is at, the elapsed time), replaced by its result line
// when it ends. Anywhere else (CI, a pipe, a file) nothing is redrawn and no
// escape code is written: each step prints one plain line when it ends, with
// its duration. Logs (pino) never go here: they go to files (see cluster.ts).
//
//   ✓ bus and store started — nats://127.0.0.1:14222, redis://127.0.0.1:16379 (0.4s)
//   ✗ nodes Ready (1/2) — timed out after 120s (2m00s)

/** Where and how progress is shown. */
export interface ProgressOptions {
  /** Writes raw text (no newline added). */
  write: (text: string) => void;
  /** A terminal: redraw the running step in place, with colours. */
  tty: boolean;
  /** Show nothing at all (`--quiet`). */
  quiet?: boolean;
  /** The clock (tests). */
  now?: () => number;
  /** How often a terminal's running line is redrawn (ms, default 100; 0: only on changes). */
  redrawMs?: number;
  /** The terminal's width: a running line is cut to fit (a wrapped line could not be redrawn in place). */
  columns?: number;
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const OK = "✓";
const FAILED = "✗";
const CSI = "\x1b[";
const CLEAR_LINE = `\r${CSI}2K`;
const paint = (code: string, s: string): string => `${CSI}${code}m${s}${CSI}0m`;

/** `s` in at most `n` characters (an ellipsis when cut). */
function cut(s: string, n: number): string {
  return s.length <= n ? s : `${s.slice(0, Math.max(0, n - 1))}…`;
}

/** A duration as a person reads it: `0.4s`, `12.3s`, `1m05s`. */
export function formatDuration(ms: number): string {
  if (ms < 60_000) return `${(Math.max(0, ms) / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}

/** One step; ends once (done or failed), later calls are ignored. */
export interface Step {
  readonly title: string;
  /** What the step is at now (a terminal shows it at once; elsewhere it is the last line's detail unless done() gives one). */
  update(detail: string): void;
  /** Ended well; `detail` what it came to. */
  done(detail?: string): void;
  /** Ended badly; `reason` why. */
  fail(reason: string): void;
}

/** The steps of one run, shown one after another. */
export class Progress {
  private readonly now: () => number;
  private current: { title: string; detail: string; started: number; ended: boolean } | undefined;
  private frame = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: ProgressOptions) {
    this.now = o.now ?? Date.now;
  }

  /** Starts a step (a running one is ended as done first: steps do not overlap). */
  begin(title: string, detail = ""): Step {
    if (this.current && !this.current.ended) this.end(OK, this.current.detail);
    const state = { title, detail, started: this.now(), ended: false };
    this.current = state;
    this.frame = 0;
    this.draw();
    if (this.o.tty && !this.o.quiet && (this.o.redrawMs ?? 100) > 0) {
      clearInterval(this.timer);
      this.timer = setInterval(() => {
        this.frame++;
        this.draw();
      }, this.o.redrawMs ?? 100);
      this.timer.unref();
    }
    const active = (): boolean => this.current === state && !state.ended;
    return {
      title,
      update: (d) => {
        if (!active()) return;
        state.detail = d;
        this.draw();
      },
      done: (d) => {
        if (active()) this.end(OK, d ?? state.detail);
      },
      fail: (reason) => {
        if (active()) this.end(FAILED, reason);
      },
    };
  }

  /**
   * Runs `fn` as a step: done with `detail(result)` when it resolves, failed
   * with the error's message when it rejects (and the error goes on).
   */
  async run<T>(title: string, fn: (step: Step) => Promise<T>, detail?: (result: T) => string): Promise<T> {
    const step = this.begin(title);
    try {
      const result = await fn(step);
      step.done(detail?.(result));
      return result;
    } catch (err) {
      step.fail((err as Error).message.split("\n")[0] ?? String(err));
      throw err;
    }
  }

  /**
   * Prints a line of its own (not a step) without breaking a running step's
   * line: on a terminal the line is cleared, the text printed, the step redrawn.
   */
  print(text: string): void {
    if (this.o.quiet) return;
    const running = this.current && !this.current.ended;
    if (this.o.tty && running) this.o.write(CLEAR_LINE);
    this.o.write(text.endsWith("\n") ? text : `${text}\n`);
    if (running) this.draw();
  }

  /** Stops redrawing; a step still running (an interrupted start) is ended as failed, so the next output starts on a line of its own. */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.current && !this.current.ended) this.end(FAILED, "interrupted");
  }

  private end(mark: string, detail: string): void {
    const s = this.current;
    if (!s) return;
    s.ended = true;
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.o.quiet) return;
    const took = formatDuration(this.now() - s.started);
    if (this.o.tty) {
      const symbol = paint(mark === OK ? "32" : "31", mark);
      this.o.write(`${CLEAR_LINE}${symbol} ${s.title}${detail ? ` ${paint("2", `— ${detail}`)}` : ""} ${paint("2", `(${took})`)}\n`);
    } else {
      this.o.write(`${mark} ${s.title}${detail ? ` — ${detail}` : ""} (${took})\n`);
    }
  }

  /** A terminal's running line; nothing elsewhere (the step's line comes when it ends). */
  private draw(): void {
    const s = this.current;
    if (!s || s.ended || this.o.quiet || !this.o.tty) return;
    const spinner = paint("36", FRAMES[this.frame % FRAMES.length] ?? "");
    const took = formatDuration(this.now() - s.started);
    // "⠋ title — detail 1.2s": the detail gives way when the line would not fit.
    const room = (this.o.columns ?? Infinity) - 1 - (2 + s.title.length + 1 + took.length);
    const detail = s.detail && room > 4 ? cut(`— ${s.detail}`, room - 1) : "";
    this.o.write(`${CLEAR_LINE}${spinner} ${s.title}${detail ? ` ${paint("2", detail)}` : ""} ${paint("2", took)}`);
  }
}
