// API Priority and Fairness, as kube-apiserver's: a request waits for a seat
// of its priority level before it runs; a level is guaranteed its share of the
// seats, borrows idle ones, and serves its flows in turn.
import { ApiError, failure } from "@choreo/kit";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { SHARES, type Classification, type PriorityLevel } from "./classify.js";

export interface FlowControlOptions {
  /**
   * Seats of all limited levels together: requests running at once
   * (kube-apiserver's --max-requests-inflight + --max-mutating-requests-inflight).
   */
  concurrency: number;
  /** How long a request may wait for its seat before it is refused with 429 (the kit client gives up after 10 s). */
  maxWaitMs: number;
  /** Requests waiting in one level beyond which a new one is refused with 429 at once. */
  queueLimit: number;
  registry?: Registry;
}

/** A request waiting for its seat. */
interface Waiter {
  since: number;
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout | undefined;
  /** Refused after waiting too long: skipped when its turn comes. */
  gone: boolean;
}

/** A FIFO of waiters that does not copy on every shift. */
class Fifo {
  private items: (Waiter | undefined)[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(w: Waiter): void {
    this.items.push(w);
  }

  shift(): Waiter | undefined {
    if (this.head >= this.items.length) return undefined;
    const w = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return w;
  }
}

class Level {
  executing = 0;
  /** Waiting requests, refused ones not counted. */
  waiting = 0;
  /** Each flow's waiters, and the flows with waiters in the order they take turns. */
  readonly flows = new Map<string, Fifo>();
  readonly turns: string[] = [];
  turn = 0;

  constructor(
    readonly name: PriorityLevel,
    /** Seats guaranteed to this level. */
    readonly nominal: number,
  ) {}

  /** The next live waiter of the next flow in turn (round robin over flows: one chatty client cannot starve the others). */
  next(): Waiter | undefined {
    while (this.turns.length > 0) {
      if (this.turn >= this.turns.length) this.turn = 0;
      const flow = this.turns[this.turn]!;
      const q = this.flows.get(flow)!;
      let w = q.shift();
      while (w?.gone) w = q.shift();
      if (q.size === 0) {
        this.flows.delete(flow);
        this.turns.splice(this.turn, 1);
      } else this.turn++;
      if (w) return w;
    }
    return undefined;
  }
}

function tooManyRequests(message: string): ApiError {
  return new ApiError(failure(429, "TooManyRequests", message, { retryAfterSeconds: 1 }));
}

/**
 * Seats for the api's requests by priority level. `run` runs a request once
 * its level has a seat: at once while the level is below its guaranteed seats
 * or the server below its limit and nobody of the level waits; else after the
 * requests queued before it — flows of a level take turns, and a level below
 * its guarantee goes before levels that borrow. `exempt` runs at once.
 * Long-running requests (watches, streams) do not come here.
 */
export class FlowControl {
  private readonly levels = new Map<PriorityLevel, Level>();
  private readonly order: Level[] = [];
  private executing = 0;
  private exemptExecuting = 0;
  /** Where the search for a level to serve starts: levels take turns too. */
  private cursor = 0;
  private readonly rejected?: Counter<"priority_level" | "reason">;
  private readonly waited?: Histogram<"priority_level">;

  constructor(private readonly opts: FlowControlOptions) {
    const total = Object.values(SHARES).reduce((a, b) => a + b, 0);
    for (const [name, share] of Object.entries(SHARES) as [Exclude<PriorityLevel, "exempt">, number][]) {
      const level = new Level(name, Math.max(1, Math.ceil((opts.concurrency * share) / total)));
      this.levels.set(name, level);
      this.order.push(level);
    }
    const registry = opts.registry;
    if (!registry) return;
    const levels = this.order;
    const exemptExecuting = (): number => this.exemptExecuting;
    new Gauge({
      name: "choreo_api_flowcontrol_current_executing_requests",
      help: "Requests holding a seat, by priority level (apiserver_flowcontrol_current_executing_requests).",
      labelNames: ["priority_level"],
      registers: [registry],
      collect() {
        for (const l of levels) this.set({ priority_level: l.name }, l.executing);
        this.set({ priority_level: "exempt" }, exemptExecuting());
      },
    });
    new Gauge({
      name: "choreo_api_flowcontrol_current_inqueue_requests",
      help: "Requests waiting for a seat, by priority level (apiserver_flowcontrol_current_inqueue_requests).",
      labelNames: ["priority_level"],
      registers: [registry],
      collect() {
        for (const l of levels) this.set({ priority_level: l.name }, l.waiting);
      },
    });
    new Gauge({
      name: "choreo_api_flowcontrol_nominal_limit_seats",
      help: "Seats guaranteed to each priority level (apiserver_flowcontrol_nominal_limit_seats).",
      labelNames: ["priority_level"],
      registers: [registry],
      collect() {
        for (const l of levels) this.set({ priority_level: l.name }, l.nominal);
      },
    });
    this.rejected = new Counter({
      name: "choreo_api_flowcontrol_rejected_requests_total",
      help: "Requests refused with 429 by priority level and reason: queue-full, time-out (apiserver_flowcontrol_rejected_requests_total).",
      labelNames: ["priority_level", "reason"],
      registers: [registry],
    });
    this.waited = new Histogram({
      name: "choreo_api_flowcontrol_request_wait_duration_seconds",
      help: "How long requests that queued waited for their seat, by priority level.",
      labelNames: ["priority_level"],
      buckets: [0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
  }

  /** What is running and waiting now, by level (for tests and the README's vocabulary). */
  snapshot(): Record<string, { executing: number; waiting: number; nominal: number }> {
    const out: Record<string, { executing: number; waiting: number; nominal: number }> = {
      exempt: { executing: this.exemptExecuting, waiting: 0, nominal: 0 },
    };
    for (const l of this.order) out[l.name] = { executing: l.executing, waiting: l.waiting, nominal: l.nominal };
    return out;
  }

  /** Runs `fn` once the request classified as `c` has its seat; 429 TooManyRequests when the level's queue is full or the wait too long. */
  run<T>(c: Classification, fn: () => Promise<T>): Promise<T> {
    if (c.level === "exempt") return this.runExempt(fn);
    const level = this.levels.get(c.level)!;
    if (level.waiting === 0 && this.mayStart(level)) {
      this.start(level);
      return this.runHolding(level, fn);
    }
    if (level.waiting >= this.opts.queueLimit) {
      this.rejected?.inc({ priority_level: level.name, reason: "queue-full" });
      return Promise.reject(tooManyRequests(`too many requests waiting at priority level ${level.name}, please try again later`));
    }
    return this.enqueue(level, c.flow).then(() => this.runHolding(level, fn));
  }

  private async runExempt<T>(fn: () => Promise<T>): Promise<T> {
    this.exemptExecuting++;
    try {
      return await fn();
    } finally {
      this.exemptExecuting--;
    }
  }

  private async runHolding<T>(level: Level, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } finally {
      level.executing--;
      this.executing--;
      this.dispatch();
    }
  }

  /** A level below its guarantee may always start one; above it only while the server has seats left (borrowing idle ones). */
  private mayStart(level: Level): boolean {
    return level.executing < level.nominal || this.executing < this.opts.concurrency;
  }

  private start(level: Level): void {
    level.executing++;
    this.executing++;
  }

  private enqueue(level: Level, flow: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = { since: performance.now(), resolve, reject, timer: undefined, gone: false };
      w.timer = setTimeout(() => {
        w.gone = true;
        level.waiting--;
        this.rejected?.inc({ priority_level: level.name, reason: "time-out" });
        reject(tooManyRequests(`the request waited ${this.opts.maxWaitMs} ms at priority level ${level.name} without a seat, please try again later`));
      }, this.opts.maxWaitMs);
      let q = level.flows.get(flow);
      if (!q) {
        level.flows.set(flow, (q = new Fifo()));
        level.turns.push(flow);
      }
      q.push(w);
      level.waiting++;
    });
  }

  /**
   * Gives free seats to waiting requests: first to levels below their
   * guarantee, then, while the server has seats left, to any level (levels
   * take turns in both rounds).
   */
  private dispatch(): void {
    for (;;) {
      const level = this.pick((l) => l.executing < l.nominal) ?? (this.executing < this.opts.concurrency ? this.pick(() => true) : undefined);
      if (!level) return;
      const w = level.next();
      if (!w) {
        level.waiting = 0; // only refused waiters were left (cannot happen while the counts agree)
        continue;
      }
      clearTimeout(w.timer);
      level.waiting--;
      this.start(level);
      this.waited?.observe({ priority_level: level.name }, (performance.now() - w.since) / 1000);
      w.resolve();
    }
  }

  /** The next level in turn with waiters that `ok` accepts. */
  private pick(ok: (l: Level) => boolean): Level | undefined {
    const n = this.order.length;
    for (let i = 0; i < n; i++) {
      const l = this.order[(this.cursor + i) % n]!;
      if (l.waiting > 0 && ok(l)) {
        this.cursor = (this.cursor + i + 1) % n;
        return l;
      }
    }
    return undefined;
  }
}
