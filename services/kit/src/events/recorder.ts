// core/v1 Events, correlated like client-go's EventCorrelator
// (tools/record/events_cache.go): similar events are aggregated into one,
// repeats bump the count of the Event already written, and count bumps are
// written asynchronously and coalesced.
import { emptyMeta, isConflict, isNotFound, keyOf } from "@choreo/kit";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { ApiClient } from "@choreo/kit/client";
import type { Event, ObjectReference } from "@choreo/kit/gen/choreo/core/v1/core";
import { FailureLog, type Logger } from "@choreo/kit/log";

export type EventType = "Normal" | "Warning";

/** The reference an Event points at, for any object with metadata. */
export function objectRef(kind: string, apiVersion: string, o: { metadata?: { namespace: string; name: string; uid: string } }): ObjectReference {
  return {
    kind,
    apiVersion,
    namespace: o.metadata?.namespace ?? "",
    name: o.metadata?.name ?? "",
    uid: o.metadata?.uid ?? "",
    resourceVersion: "",
    fieldPath: "",
  };
}

/** What is written (pure). */
export function newEvent(ref: ObjectReference, type: EventType, reason: string, message: string, component: string, now: string): Event {
  const suffix = `${Date.now().toString(16)}${Math.floor(Math.random() * 0xffff).toString(16)}`;
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: emptyMeta({ name: `${ref.name}.${suffix}`, namespace: ref.namespace || "default" }),
    involvedObject: ref,
    reason,
    message,
    type,
    count: 1,
    firstTimestamp: now,
    lastTimestamp: now,
    source: { component, host: "" },
    reportingComponent: component,
    reportingInstance: "",
    eventTime: "",
    action: "",
  };
}

/** client-go's prefix of an aggregated Event's message. */
export const COMBINED_PREFIX = "(combined from similar events): ";

/** Tuning of {@link EventRecorder}; the defaults are client-go's. */
export interface EventRecorderOptions {
  /** Similar events (same object, type and reason; another message) kept apart before they are combined (default 10). */
  maxSimilar?: number;
  /** How long similar events are remembered for aggregation (default 10 min). */
  similarWindowMs?: number;
  /** The shortest time between two writes of one Event (default 1 s); occurrences meanwhile only bump its count in memory. */
  minWriteIntervalMs?: number;
  /** Events remembered for count bumps (default 4096, client-go's LRU); the least recently seen idle ones are forgotten first. */
  maxEvents?: number;
}

/** Which similar messages one (object, type, reason) had lately (client-go's aggregateRecord). */
interface Similar {
  messages: Set<string>;
  lastMs: number;
}

/** One Event as this recorder knows it (client-go's eventLog), and its pending bump. */
interface Tracked {
  ref: ObjectReference;
  type: EventType;
  reason: string;
  /** The Event as last written (carries its resourceVersion); undefined until created. */
  written: Event | undefined;
  /** Occurrences so far, and what the latest one said. */
  count: number;
  message: string;
  firstTimestamp: string;
  lastTimestamp: string;
  /** The count the api holds (what `written` says). */
  writtenCount: number;
  /** When the last write started (ms since epoch). */
  lastWriteMs: number;
  inFlight: Promise<void> | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Failed writes in a row (other than conflicts and NotFound, which are handled). */
  failures: number;
}

/** client-go's maxTriesPerEvent: a count that cannot be written after this many tries is given up. */
const MAX_TRIES = 12;

/**
 * Records Events like client-go's recorder: `emit` never waits. The first
 * occurrence of an Event is created at once; a repeat (same object, type,
 * reason and message) bumps `count` and `lastTimestamp` in memory, written
 * at most once per `minWriteIntervalMs` per Event and never while a write of
 * it is in flight — the last count is always written (a timer). After
 * `maxSimilar` different messages for one (object, type, reason) within
 * `similarWindowMs`, further ones go to one Event whose message is
 * "(combined from similar events): <latest message>". An update carries the
 * resourceVersion written last (no read first); on a conflict the Event is
 * re-read and the bump applied to it, and an Event deleted meanwhile
 * (expired) is created again with its count.
 */
export class EventRecorder {
  private readonly similar = new Map<string, Similar>();
  /** Event key → what this recorder knows of it; Map order is recency (re-inserted on each occurrence). */
  private readonly tracked = new Map<string, Tracked>();
  private readonly maxSimilar: number;
  private readonly similarWindowMs: number;
  private readonly minWriteIntervalMs: number;
  private readonly maxEvents: number;
  /** Events not recorded (the api away: every Event of every pod fails) — a few whole lines a window, then a summary. */
  private readonly failures: FailureLog;

  constructor(
    private readonly client: Pick<ApiClient, "typed">,
    private readonly component: string,
    private readonly log: Logger,
    options: EventRecorderOptions = {},
  ) {
    this.failures = new FailureLog(log);
    this.maxSimilar = options.maxSimilar ?? 10;
    this.similarWindowMs = options.similarWindowMs ?? 600_000;
    this.minWriteIntervalMs = options.minWriteIntervalMs ?? 1000;
    this.maxEvents = options.maxEvents ?? 4096;
  }

  /** Records an event without making the caller wait; failures are logged. */
  emit(ref: ObjectReference, type: EventType, reason: string, message: string): void {
    const t = this.observe(ref, type, reason, message);
    this.schedule(t);
  }

  /** Records an event and waits until the api holds it (with this occurrence counted). */
  async record(ref: ObjectReference, type: EventType, reason: string, message: string): Promise<void> {
    const t = this.observe(ref, type, reason, message);
    while (t.inFlight) await t.inFlight.catch(() => undefined);
    if (t.timer) clearTimeout(t.timer);
    t.timer = undefined;
    if (t.writtenCount < t.count || !t.written) await this.write(t);
  }

  /** Writes every pending count now (tests, shutdown). */
  async flush(): Promise<void> {
    for (const t of [...this.tracked.values()]) {
      while (t.inFlight) await t.inFlight.catch(() => undefined);
      if (t.timer) clearTimeout(t.timer);
      t.timer = undefined;
      if (t.writtenCount < t.count) await this.write(t).catch((err: unknown) => this.failed(t, err));
    }
  }

  /** Counts one occurrence in memory (client-go's EventAggregator then EventLogger); returns the Event it counts towards. */
  private observe(ref: ObjectReference, type: EventType, reason: string, message: string): Tracked {
    const nowMs = Date.now();
    const now = nowRfc3339();
    const aggKey = [this.component, ref.kind, ref.apiVersion, keyOf(ref), ref.uid, type, reason].join("\u0000");
    let sim = this.similar.get(aggKey);
    if (!sim || nowMs - sim.lastMs > this.similarWindowMs) sim = { messages: new Set(), lastMs: nowMs };
    this.similar.delete(aggKey);
    this.similar.set(aggKey, sim);
    sim.lastMs = nowMs;
    sim.messages.add(message);
    let key = `${aggKey}\u0000${message}`;
    if (sim.messages.size >= this.maxSimilar) {
      // Combined: the set stays bounded, and every further message counts towards the one aggregate Event.
      sim.messages.delete(sim.messages.values().next().value ?? message);
      key = aggKey;
      message = COMBINED_PREFIX + message;
    }
    if (this.similar.size > this.maxEvents) this.similar.delete(this.similar.keys().next().value ?? "");

    let t = this.tracked.get(key);
    if (t) {
      this.tracked.delete(key);
      t.count++;
      t.message = message;
      t.lastTimestamp = now;
    } else {
      t = {
        ref,
        type,
        reason,
        written: undefined,
        count: 1,
        message,
        firstTimestamp: now,
        lastTimestamp: now,
        writtenCount: 0,
        lastWriteMs: 0,
        inFlight: undefined,
        timer: undefined,
        failures: 0,
      };
    }
    this.tracked.set(key, t);
    this.forgetIdle();
    return t;
  }

  /** Keeps memory bounded: forgets the least recently seen Events that have nothing left to write. */
  private forgetIdle(): void {
    if (this.tracked.size <= this.maxEvents) return;
    for (const [k, t] of this.tracked) {
      if (this.tracked.size <= this.maxEvents) break;
      if (!t.inFlight && !t.timer && t.writtenCount >= t.count) this.tracked.delete(k);
    }
  }

  /** Writes now if allowed, else when the in-flight write ends or the minimum interval has passed. */
  private schedule(t: Tracked): void {
    if (t.inFlight || t.timer) return; // the write in flight reschedules when it ends; a timer is set
    if (t.writtenCount >= t.count && t.written) return;
    // After a failure the interval doubles (at most 30 s); the first write of an Event is never held.
    const interval = t.failures > 0 ? Math.min(30_000, Math.max(this.minWriteIntervalMs, 100) * 2 ** (t.failures - 1)) : this.minWriteIntervalMs;
    const wait = t.lastWriteMs + interval - Date.now();
    if ((!t.written && t.failures === 0) || wait <= 0) {
      this.write(t).catch((err: unknown) => this.failed(t, err));
      return;
    }
    t.timer = setTimeout(() => {
      t.timer = undefined;
      this.schedule(t);
    }, wait);
    t.timer.unref?.();
  }

  private failed(t: Tracked, err: unknown): void {
    const object = keyOf(t.ref);
    this.failures.failed("event not recorded", `${object} ${t.reason}`, err, { object, reason: t.reason, count: t.count });
  }

  /** One write of the Event's latest count (create, or update with the resourceVersion held); then what came meanwhile is scheduled. */
  private write(t: Tracked): Promise<void> {
    t.lastWriteMs = Date.now();
    const run = async (): Promise<void> => {
      const count = t.count;
      const events = this.client.typed("event");
      const bumped = (ev: Event): Event => ({ ...ev, count, message: t.message, lastTimestamp: t.lastTimestamp });
      if (t.written) {
        try {
          t.written = await events.update(bumped(t.written));
        } catch (err) {
          if (isConflict(err)) {
            // Someone else wrote it: apply the bump to the fresh object (its count is ours, the recorder's tally).
            t.written = await this.updateFresh(t, bumped);
          } else if (isNotFound(err)) {
            t.written = undefined; // deleted (expired): created again below, with the count
          } else throw err;
        }
      }
      if (!t.written) {
        const ev = newEvent(t.ref, t.type, t.reason, t.message, this.component, t.firstTimestamp);
        t.written = await events.create({ ...ev, count, lastTimestamp: t.lastTimestamp });
      }
      t.writtenCount = count;
      t.failures = 0;
    };
    const p = run()
      .catch((err: unknown) => {
        if (++t.failures >= MAX_TRIES) {
          t.failures = 0;
          t.writtenCount = t.count; // given up, as client-go does
        }
        throw err;
      })
      .finally(() => {
        t.inFlight = undefined;
        if (t.writtenCount < t.count) this.schedule(t);
      });
    t.inFlight = p;
    return p;
  }

  /** Update on a re-read object until no conflict; undefined when the Event is gone. */
  private async updateFresh(t: Tracked, bumped: (ev: Event) => Event): Promise<Event | undefined> {
    const events = this.client.typed("event");
    const { namespace, name } = t.written?.metadata ?? { namespace: "", name: "" };
    for (let i = 0; ; i++) {
      try {
        return await events.update(bumped(await events.get(namespace, name)));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        if (!isConflict(err) || i >= 9) throw err;
      }
    }
  }
}
