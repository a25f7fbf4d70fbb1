// subscribe(): typed change events from the event stream (CHOREO_EVENTS),
// resumable from a durable JetStream consumer. See ../README.md for the contract.
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type Consumer, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { ApiError, badRequest, expired, kindByResource, kindOf, metaOf, unwrap, type AnyObject, type KindInfo } from "@choreo/kit";
import { parseLabelSelector } from "@choreo/kit/apimachinery";
import { EVENT_PREFIX, EVENT_STREAM, decodeEvent, resourceFilter, streamState, token } from "@choreo/kit/bus";

/** What happened to the object. */
export type ChangeType = "ADDED" | "MODIFIED" | "DELETED";

/** One decoded change of the event log. */
export interface ChangeEvent<T extends AnyObject = AnyObject> {
  type: ChangeType;
  /** The cluster revision of the change: the stream sequence and `metadata.resourceVersion`. */
  revision: number;
  /** The object after the change (for DELETED: as last stored). */
  object: T;
  /** The object's kind (resource, kind name, apiVersion…). */
  kind: KindInfo;
  /** The object's labels before a MODIFIED change, when the api recorded them. */
  previousLabels?: Record<string, string>;
}

/** Options of {@link subscribe}. */
export interface SubscribeOptions {
  /** Plural resource name (`pods`, `services`…), or `"*"`/undefined for every resource. */
  resource?: string;
  /** Only this namespace. */
  namespace?: string;
  /** Pods only: those bound to this node (`""`: unbound pods). */
  node?: string;
  /** Kubernetes label selector, applied here (the subject does not carry labels). */
  labelSelector?: string;
  /**
   * Deliver every change after this revision. Default: from now on (live only).
   * With `durable`, used only when the durable consumer does not exist yet.
   */
  fromRevision?: number;
  /**
   * Name of a durable JetStream consumer holding this subscriber's position
   * (letters, digits, `-`, `_`). Each event is acked when the caller asks for
   * the next one (its loop body is done with it): after a restart the
   * subscription resumes after the last acked event.
   */
  durable?: string;
  /** Stop when every change stored when the subscription started has been delivered (`choreo events` without -w). */
  untilCaughtUp?: boolean;
  signal?: AbortSignal;
}

/** The one subject filter of a subscription (NATS 2.9 takes one per consumer). */
export function eventFilter(o: Pick<SubscribeOptions, "resource" | "namespace" | "node">): string {
  const resource = o.resource && o.resource !== "*" ? o.resource : undefined;
  if (o.node !== undefined) {
    if (resource !== "pods") throw badRequest("node selects pods only: set resource to pods");
    return `${EVENT_PREFIX}.pods.${token(o.node)}.${o.namespace ? `${token(o.namespace)}.*` : ">"}`;
  }
  if (!resource) {
    if (o.namespace) throw badRequest("a namespace needs a resource");
    return `${EVENT_PREFIX}.>`;
  }
  if (!kindByResource(resource)) throw badRequest(`unknown resource ${JSON.stringify(resource)}`);
  return resourceFilter(resource, o.namespace ?? "");
}

const DURABLE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** How many events may be delivered and not yet acked (the pull batch). */
const MAX_ACK_PENDING = 2_048;
/** A live subscriber's consumer is reaped by the server this long after it stopped pulling. */
const EPHEMERAL_INACTIVE_MS = 30_000;

/** The consumer's settings for a position `after` (every matching change after that revision). */
function consumerConfig(filter: string, after: number | undefined, durable: string | undefined): Parameters<JetStreamManager["consumers"]["add"]>[1] {
  const start =
    after === undefined
      ? { deliver_policy: DeliverPolicy.New }
      : after <= 0
        ? { deliver_policy: DeliverPolicy.All }
        : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: after + 1 };
  return {
    ...start,
    filter_subject: filter,
    ...(durable ? { durable_name: durable, name: durable } : { inactive_threshold: EPHEMERAL_INACTIVE_MS * 1_000_000 }),
    // A live (ephemeral) subscription keeps no position on the server: nothing to ack.
    ...(durable ? { ack_policy: AckPolicy.Explicit, max_ack_pending: MAX_ACK_PENDING, ack_wait: 30_000_000_000 } : { ack_policy: AckPolicy.None }),
  };
}

/** 410 Expired when the log no longer holds the change after revision `after` (nor is it still to come). */
async function checkPosition(jsm: JetStreamManager, after: number): Promise<void> {
  const { firstRevision, lastRevision } = await streamState(jsm);
  if (after + 1 < firstRevision && after < lastRevision) {
    throw expired(`too old resource version: ${after} (${firstRevision - 1}): the event log no longer holds the changes after it; relist`);
  }
}

/**
 * Makes (or finds) the consumer, positioned after revision `after`. A durable
 * that exists keeps its position; when it has delivered events not yet acked
 * (its subscriber died holding them) it is made again after its ack floor, so
 * they come at once rather than after the ack wait.
 */
async function openConsumer(
  jsm: JetStreamManager,
  filter: string,
  after: number | undefined,
  durable: string | undefined,
): Promise<{ name: string; position: number; pending: number }> {
  if (!durable) {
    if (after !== undefined) await checkPosition(jsm, after);
    const info = await jsm.consumers.add(EVENT_STREAM, consumerConfig(filter, after, undefined));
    return { name: info.name, position: after ?? info.delivered.stream_seq, pending: info.num_pending };
  }
  const existing = await jsm.consumers.info(EVENT_STREAM, durable).catch((err: unknown) => {
    if (/consumer not found/i.test(String((err as Error).message))) return undefined;
    throw err;
  });
  if (existing && existing.config.filter_subject !== filter) {
    throw badRequest(`durable ${durable} follows ${existing.config.filter_subject}, not ${filter}: use another name, or delete it`);
  }
  if (existing) {
    const floor = existing.ack_floor.stream_seq || (existing.config.opt_start_seq ? existing.config.opt_start_seq - 1 : existing.delivered.stream_seq);
    await checkPosition(jsm, floor);
    if (existing.num_ack_pending === 0) return { name: durable, position: floor, pending: existing.num_pending };
    await jsm.consumers.delete(EVENT_STREAM, durable);
    const info = await jsm.consumers.add(EVENT_STREAM, consumerConfig(filter, floor, durable));
    return { name: durable, position: floor, pending: info.num_pending };
  }
  if (after !== undefined) await checkPosition(jsm, after);
  const info = await jsm.consumers.add(EVENT_STREAM, consumerConfig(filter, after, durable));
  return { name: durable, position: after ?? info.delivered.stream_seq, pending: info.num_pending };
}

/** The event of a message, if it passes the label selector (a MODIFIED that stopped matching becomes DELETED, as a filtered watch). */
function changeOf(m: JsMsg, matches: ((l: Record<string, string> | undefined) => boolean) | undefined): ChangeEvent | undefined {
  const ev = decodeEvent(m.data);
  if (!ev.object) return undefined;
  let type = ev.type as ChangeType;
  if (matches) {
    const now = matches(metaOf(ev.object).labels);
    const before = ev.hasPrev ? matches(ev.prevLabels) : now;
    if (!now && !before) return undefined;
    if (type === "MODIFIED" && !now) type = "DELETED";
    else if (type === "MODIFIED" && !before) type = "ADDED";
  }
  return {
    type,
    revision: ev.revision || m.seq,
    object: unwrap(ev.object),
    kind: kindOf(ev.object),
    ...(ev.hasPrev ? { previousLabels: ev.prevLabels } : {}),
  };
}

/**
 * Typed change events from the event stream, in revision order, as an async
 * iterator. At-least-once: with `durable`, each event is acked when the
 * caller's loop asks for the next one; after a crash the events from the one
 * being handled on are delivered again — drop those whose revision you have
 * already handled. Throws a 410 Expired ApiError (`isExpired`) when the
 * position is older than the log keeps, or when changes were dropped from
 * the log before they were delivered (a subscriber too slow for the
 * retention): relist, then subscribe from the list's revision.
 */
export async function* subscribe(nc: NatsConnection, opts: SubscribeOptions = {}): AsyncGenerator<ChangeEvent> {
  const filter = eventFilter(opts);
  if (opts.durable !== undefined && !DURABLE_NAME.test(opts.durable))
    throw badRequest(`durable name ${JSON.stringify(opts.durable)}: letters, digits, - and _ only`);
  const selector = opts.labelSelector ? parseLabelSelector(opts.labelSelector) : undefined;
  const matches = selector && !selector.isEverything() ? (l: Record<string, string> | undefined) => selector.matches(l) : undefined;
  const signal = opts.signal ?? new AbortController().signal;
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const endAt = opts.untilCaughtUp ? (await streamState(jsm)).lastRevision : Infinity;
  const { name, position, pending } = await openConsumer(jsm, filter, opts.fromRevision, opts.durable);
  /** The stream sequence of the last message handed to the caller (and, durable, acked once the caller comes back). */
  let seen = position;
  /** The consumer's pending count at the last message: >0 means the subscriber was behind. */
  let behind = false;
  /** The consumer's delivery sequence of the last message received (0: not known yet). */
  let lastDelivery = 0;
  const exactGaps = filter === `${EVENT_PREFIX}.>`;
  let consumer: Consumer = await js.consumers.get(EVENT_STREAM, name);
  try {
    if (seen >= endAt || (opts.untilCaughtUp && pending === 0)) return;
    for (;;) {
      const messages = await consumer.consume({ max_messages: Math.min(1_024, MAX_ACK_PENDING), idle_heartbeat: 2_000 });
      let restart = false;
      void (async () => {
        for await (const s of messages.status()) {
          if (s.type === "heartbeats_missed" || s.type === "consumer_not_found" || s.type === "consumer_deleted") {
            restart = true;
            void messages.close();
            return;
          }
        }
      })().catch(() => undefined);
      const onAbort = (): void => void messages.close();
      signal.addEventListener("abort", onAbort, { once: true });
      try {
        if (signal.aborted) return;
        for await (const m of messages) {
          // The consumer numbers its deliveries 1, 2, 3…: a jump means deliveries this client never received
          // (a pull's answer lost with a connection). Later ones must not pass them: start again after `seen`.
          const delivery = m.info.deliverySequence;
          if (lastDelivery > 0 && delivery !== lastDelivery + 1) {
            restart = true;
            break;
          }
          lastDelivery = delivery;
          if (m.seq <= seen) {
            if (opts.durable) m.ack(); // a redelivery of what the caller already had
            continue;
          }
          if (m.seq > seen + 1 && (exactGaps || behind)) await checkGap(jsm, seen, m.seq);
          behind = m.info.pending > 0;
          seen = m.seq;
          const change = changeOf(m, matches);
          if (change) yield change;
          if (opts.durable) m.ack();
          if (signal.aborted) return;
          if (seen >= endAt || (opts.untilCaughtUp && m.info.pending === 0)) return;
        }
      } finally {
        signal.removeEventListener("abort", onAbort);
        await messages.close();
      }
      if (!restart || signal.aborted) return;
      // The consumer's server went away (or the consumer did, or deliveries were lost): make it again after what was handed over.
      await reopen();
      lastDelivery = 0;
    }
  } finally {
    if (!opts.durable) void jsm.consumers.delete(EVENT_STREAM, name).catch(() => undefined);
  }

  async function reopen(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        if (opts.durable) await jsm.consumers.delete(EVENT_STREAM, name).catch(() => undefined);
        await checkPosition(jsm, seen);
        const info = await jsm.consumers.add(EVENT_STREAM, consumerConfig(filter, seen, opts.durable));
        consumer = await js.consumers.get(EVENT_STREAM, info.name);
        return;
      } catch (err) {
        if (err instanceof ApiError || attempt > 40 || signal.aborted) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }
}

/**
 * A jump of the stream sequence from `seen` to `next`: on an unfiltered
 * subscription, or one that was behind, the changes in between may have
 * been dropped by the log's retention before they were delivered. When the
 * log's first revision has passed `seen + 1`, say so (410 Expired): the
 * subscriber cannot know whether it missed a change.
 */
async function checkGap(jsm: JetStreamManager, seen: number, next: number): Promise<void> {
  const { firstRevision } = await streamState(jsm);
  if (firstRevision > seen + 1) {
    throw expired(`changes ${seen + 1}..${Math.min(next, firstRevision) - 1} left the event log before they were delivered (a gap): relist`);
  }
}
