// core/v1 Events, aggregated like Kubernetes: a repeat of the same
// (object, type, reason, message) bumps count and lastTimestamp on the Event
// already written (read-modify-write) instead of creating another.
import { emptyMeta, isNotFound, keyOf } from "@choreo/kit";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { ApiClient } from "@choreo/kit/client";
import { retryOnConflict } from "@choreo/kit/client";
import type { Event, ObjectReference } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Logger } from "@choreo/kit/log";

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

export class EventRecorder {
  /** Aggregation key → the Event's namespace/name. */
  private readonly written = new Map<string, { namespace: string; name: string }>();

  constructor(
    private readonly client: Pick<ApiClient, "typed">,
    private readonly component: string,
    private readonly log: Logger,
  ) {}

  /** Records an event without making the caller wait; failures are logged. */
  emit(ref: ObjectReference, type: EventType, reason: string, message: string): void {
    this.record(ref, type, reason, message).catch((err: unknown) => this.log.warn({ err, object: keyOf(ref), reason }, "event not recorded"));
  }

  async record(ref: ObjectReference, type: EventType, reason: string, message: string): Promise<void> {
    const agg = `${ref.uid}|${keyOf(ref)}|${type}|${reason}|${message}`;
    const seen = this.written.get(agg);
    const events = this.client.typed("event");
    if (seen) {
      try {
        await retryOnConflict(async () => {
          const ev = structuredClone(await events.get(seen.namespace, seen.name));
          ev.count = (ev.count || 1) + 1;
          ev.lastTimestamp = nowRfc3339();
          await events.update(ev);
        });
        return;
      } catch (err) {
        if (!isNotFound(err)) throw err;
        this.written.delete(agg);
      }
    }
    const created = await events.create(newEvent(ref, type, reason, message, this.component, nowRfc3339()));
    if (this.written.size > 10_000) this.written.clear();
    this.written.set(agg, { namespace: created.metadata?.namespace ?? "", name: created.metadata?.name ?? "" });
  }
}
