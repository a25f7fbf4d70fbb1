import type { JetStreamManager } from "@nats-io/jetstream";
import type { Msg, NatsConnection, Status, Subscription } from "@nats-io/transport-node";
import type { Redis } from "ioredis";
import { headers } from "@nats-io/transport-node";
import {
  decodeEvent,
  encodeEvent,
  EVENT_SIGNATURE_HEADER,
  EVENT_STREAM,
  newInbox,
  noticeSubjectOf,
  streamState,
  type EventSigner,
  type EventVerifier,
} from "@choreo/kit/bus";
import type { Logger } from "@choreo/kit/log";
import { sleep } from "@choreo/kit/lifecycle";
import { withRevision } from "./event-revision.js";
import { CHANGES_KEY, RELAY_LOCK_KEY } from "./keys.js";

/** Options of the relay. */
export interface RelayOptions {
  redis: Redis;
  nc: NatsConnection;
  jsm: JetStreamManager;
  log: Logger;
  /** This replica's identity (the lease holder). */
  id: string;
  batch?: number;
  /** Signs every message (the Choreo-Signature header) so node agents can refuse forged events. */
  signer?: EventSigner;
  /** Test fault points: kill -9 this process before/after the Nth publish batch. */
  crashBeforePublishEvery?: number;
  crashAfterPublishEvery?: number;
  onBacklog?: (n: number) => void;
  onPublished?: (n: number) => void;
  /**
   * The store gave `revision`, which the log holds, to another change (a
   * Redis split brain): called instead of dropping the record as published;
   * the api rebuilds the store from the log (StoreRecovery.rebuild) and
   * answers true; false (not rebuilt): the records are dropped as before.
   */
  onDiverged?: (revision: number) => Promise<boolean>;
}

const LEASE_MS = 5_000;
/**
 * How long a batch waits for its acks before the relay re-reads the stream
 * (a lost ack: the next publish is refused or deduplicated). Short: on a NATS
 * cluster whose stream leader died, the connection stays up on another
 * server and nothing else tells the relay its batch went nowhere — 10 s here
 * held every event back 10 s past the new leader's election.
 */
const ACK_TIMEOUT_MS = 3_000;

/**
 * Publishes the change records from Redis to the event log, in revision
 * order, exactly once: each publish expects the stream's last sequence to be
 * revision-1, so the stream sequence equals the revision and a repeated
 * publish (after a crash) is refused instead of duplicated. Records are
 * trimmed from Redis only after JetStream acknowledged them.
 *
 * A batch goes out as plain publishes whose replies (JetStream's acks) come
 * to one inbox subscription, all awaited together; its signatures are
 * computed together on the thread pool. The stream's last sequence is read
 * from the server only at the start and after a refusal or a missing ack;
 * in between it is the last acknowledged revision (if another replica
 * published meanwhile, the next publish is refused and the relay re-reads).
 */
export class Relay {
  readonly name = "relay";
  private batches = 0;
  /** Times the store was found to have given a logged revision to another change. */
  diverged = 0;
  /** Batches refused from their first record in a row (the stream leaderless: JetStream answers 503 at once). */
  private refusals = 0;
  /** The stream's last sequence as our own acks left it; undefined: ask the stream. */
  private published: number | undefined;
  private acks: { inbox: string; sub: Subscription; waiting: Map<string, (m: Msg | undefined) => void> } | undefined;

  /** Checks that the log's message at a revision is the api's before taking it for another primary's change. */
  private readonly verifier: EventVerifier | undefined;
  /** The revisions whose log message was found unsigned (logged once each). */
  private readonly forgeriesSeen = new Set<number>();

  constructor(private readonly opts: RelayOptions) {
    this.verifier = opts.signer?.verifier();
  }

  async start(signal: AbortSignal): Promise<void> {
    const blocker = this.opts.redis.duplicate();
    const log = this.opts.log;
    // A publish sent as the connection went down gets no ack: count it missing at once, rather than
    // after ACK_TIMEOUT_MS, so the stream is re-read and the rest published as soon as the server is back
    // (a 10 s stall after a nats-server restart let an RC, blind to its own create, create twice).
    const statuses = this.opts.nc.status() as AsyncIterable<Status> & { stop?: () => void };
    void (async () => {
      for await (const st of statuses) {
        if (st.type !== "disconnect" && st.type !== "reconnect") continue;
        const waiting = this.acks?.waiting;
        if (!waiting) continue;
        for (const resolve of waiting.values()) resolve(undefined);
        waiting.clear();
      }
    })().catch(() => undefined);
    // The main connection's listener is not copied: unheard, each failed reconnect went to stderr (the main one logs them).
    blocker.on("error", () => undefined);
    try {
      while (!signal.aborted) {
        try {
          if (!(await this.holdLease())) {
            this.published = undefined;
            await sleep(1_000, signal);
            continue;
          }
          const reread = this.published === undefined;
          const published = this.published ?? (await streamState(this.opts.jsm)).lastRevision;
          this.published = undefined;
          // Records at or below the log's last sequence are dropped as published: check first that they are what the log holds.
          const diverged = reread && this.opts.onDiverged ? await this.divergedAt(published) : undefined;
          if (diverged !== undefined) {
            this.diverged++;
            log.error({ revision: diverged }, "the log holds another change at a revision the store gave out");
            if (await this.opts.onDiverged!(diverged)) continue;
          }
          const sent = await this.publishFrom(published);
          if (sent === 0 && this.refusals > 0) {
            // Refused outright (no stream leader yet after an outage): ask again soon, not in a tight loop — 25 ms
            // doubling to 250 ms, so the first publish after the leader is back waits at most a quarter second.
            await sleep(Math.min(250, 25 * 2 ** Math.min(this.refusals - 1, 4)), signal);
            continue;
          }
          if (sent === 0) {
            // Wait for the next record (or a second, to renew the lease).
            await blocker.xread("COUNT", 1, "BLOCK", 1_000, "STREAMS", CHANGES_KEY, `${published}-0`);
          }
        } catch (err) {
          if (signal.aborted) break;
          log.error({ err }, "relay step failed");
          await sleep(500, signal);
        }
      }
    } finally {
      statuses.stop?.();
      blocker.disconnect();
      this.acks?.sub.unsubscribe();
      this.acks = undefined;
      this.published = undefined;
      await this.releaseLease().catch(() => undefined);
    }
  }

  private async holdLease(): Promise<boolean> {
    const r = this.opts.redis;
    const ok = await r.set(RELAY_LOCK_KEY, this.opts.id, "PX", LEASE_MS, "NX");
    if (ok) return true;
    if ((await r.get(RELAY_LOCK_KEY)) !== this.opts.id) return false;
    await r.pexpire(RELAY_LOCK_KEY, LEASE_MS);
    return true;
  }

  private async releaseLease(): Promise<void> {
    if ((await this.opts.redis.get(RELAY_LOCK_KEY)) === this.opts.id) await this.opts.redis.del(RELAY_LOCK_KEY);
  }

  /**
   * The first revision at or below `published` (the log's last sequence)
   * whose change record is not the message the log holds at that sequence,
   * or undefined. Such records are normally the same change, published
   * before a crash let the relay trim them; byte for byte, as the relay
   * publishes the record's bytes. A sequence the log no longer holds is not
   * compared. With signing on, only a message signed by the api counts:
   * another primary's relay signed its change with the same key, while an
   * unsigned or wrongly signed message at that sequence is a forgery (a
   * publish nats-server's permissions refuse in a cluster; tests forge them)
   * and is logged, never taken as the store's truth.
   */
  private async divergedAt(published: number): Promise<number | undefined> {
    const entries = await this.opts.redis.xrangeBuffer(CHANGES_KEY, "-", `${published}-0`, "COUNT", 512);
    for (const [idBuf, fields] of entries) {
      const rev = Number(idBuf.toString().split("-")[0]);
      const data = recordData(fields);
      const bytes = (data && withRevision(data, rev)) ?? reencode(data ?? Buffer.alloc(0), rev);
      const stored = await this.opts.jsm.streams.getMessage(EVENT_STREAM, { seq: rev }).catch(() => null);
      if (!stored || Buffer.from(stored.data).equals(Buffer.from(bytes))) continue;
      if (this.verifier && !this.verifier.verify(stored.data, stored.header?.get(EVENT_SIGNATURE_HEADER) || undefined)) {
        if (!this.forgeriesSeen.has(rev)) {
          this.forgeriesSeen.add(rev);
          if (this.forgeriesSeen.size > 1_000) this.forgeriesSeen.clear();
          this.opts.log.error(
            { revision: rev, subject: stored.subject },
            "the log holds a message without the api's signature at a revision the store gave out",
          );
        }
        continue;
      }
      return rev;
    }
    return undefined;
  }

  /** Publishes the records after `published`; returns how many went out. */
  private async publishFrom(published: number): Promise<number> {
    const r = this.opts.redis;
    // Records at or below the stream's last sequence are already published
    // (a crash between publish and trim): drop them.
    await r.xtrim(CHANGES_KEY, "MINID", `${published + 1}-0`);
    const entries = await r.xrangeBuffer(CHANGES_KEY, `${published + 1}-0`, "+", "COUNT", this.opts.batch ?? 512);
    this.opts.onBacklog?.(await r.xlen(CHANGES_KEY));
    if (entries.length === 0) {
      this.published = published;
      this.refusals = 0;
      return 0;
    }
    this.batches++;
    const every = this.opts.crashBeforePublishEvery;
    if (every && this.batches % every === 0) process.kill(process.pid, "SIGKILL");

    const batch: { rev: number; subject: string; bytes: Uint8Array }[] = [];
    let expected = published;
    for (const [idBuf, fields] of entries) {
      const rev = Number(idBuf.toString().split("-")[0]);
      if (rev !== expected + 1) {
        this.opts.log.error({ expected: expected + 1, found: rev }, "gap in change records");
        break;
      }
      let subject = "";
      let data: Buffer | undefined;
      for (let i = 0; i + 1 < fields.length; i += 2) {
        const k = fields[i]?.toString();
        if (k === "s") subject = (fields[i + 1] as Buffer).toString();
        else if (k === "e") data = fields[i + 1] as Buffer;
      }
      // The revision written into the record's bytes (event-revision.ts); decoded and encoded only if they are not as the store writes them.
      const bytes = (data && withRevision(data, rev)) ?? reencode(data ?? Buffer.alloc(0), rev);
      batch.push({ rev, subject, bytes });
      expected = rev;
    }
    const signatures = this.opts.signer ? await Promise.all(batch.map((b) => this.opts.signer!.signAsync(b.bytes))) : undefined;
    const replies = this.ackInbox();
    const batchNo = this.batches;
    const answers = batch.map((b, i) => {
      const hdrs = headers();
      // What js.publish's `expect.lastSequence` sends: the stream refuses the message unless its last sequence is rev-1.
      hdrs.set("Nats-Expected-Last-Sequence", String(b.rev - 1));
      if (signatures) hdrs.set(EVENT_SIGNATURE_HEADER, signatures[i]!);
      // Unique per batch: a late ack of an earlier batch answers no one here.
      const token = `${batchNo}_${b.rev}`;
      const answer = new Promise<Msg | undefined>((resolve) => replies.waiting.set(token, resolve));
      this.opts.nc.publish(b.subject, b.bytes, { reply: `${replies.inbox}.${token}`, headers: hdrs });
      return answer;
    });
    const timer = setTimeout(() => {
      for (const b of batch) {
        const token = `${batchNo}_${b.rev}`;
        replies.waiting.get(token)?.(undefined);
        replies.waiting.delete(token);
      }
    }, ACK_TIMEOUT_MS);
    const results = await Promise.all(answers);
    clearTimeout(timer);
    let ok = 0;
    for (const [i, m] of results.entries()) {
      const refusal = ackRefusal(m, batch[i]!.rev);
      if (refusal) {
        // The first of a run of refusals, then one in 100 (a leaderless stream refuses every try for seconds).
        if (ok > 0 || this.refusals % 100 === 0)
          this.opts.log.warn({ revision: batch[i]!.rev, refusal, refusedInARow: ok > 0 ? 0 : this.refusals }, "publish refused; re-reading the stream");
        break;
      }
      ok++;
    }
    this.refusals = ok === 0 && batch.length > 0 ? this.refusals + 1 : 0;
    // ConfigMap and Secret notices (no body) for node agents, which may not read those events.
    for (const b of batch.slice(0, ok)) {
      const notice = noticeSubjectOf(b.subject);
      if (notice) this.opts.nc.publish(notice);
    }
    const after = this.opts.crashAfterPublishEvery;
    if (after && this.batches % after === 0) process.kill(process.pid, "SIGKILL");
    if (ok > 0) await r.xtrim(CHANGES_KEY, "MINID", `${published + ok + 1}-0`);
    // All acknowledged and no gap: the stream's last sequence is known without asking it
    // (a gap: another replica published and trimmed meanwhile — ask the stream).
    if (ok === batch.length && batch.length === entries.length) this.published = published + ok;
    this.opts.onPublished?.(ok);
    return ok;
  }

  /** The subscription hearing the acks, one reply subject per revision under one inbox. */
  private ackInbox(): NonNullable<Relay["acks"]> {
    if (this.acks && !this.acks.sub.isClosed()) return this.acks;
    const inbox = newInbox(this.opts.nc);
    const waiting = new Map<string, (m: Msg | undefined) => void>();
    const sub = this.opts.nc.subscribe(`${inbox}.*`, {
      callback: (err, m) => {
        if (err || !m) return;
        const token = m.subject.slice(inbox.length + 1);
        const resolve = waiting.get(token);
        waiting.delete(token);
        resolve?.(m);
      },
    });
    this.acks = { inbox, sub, waiting };
    return this.acks;
  }
}

/** The event bytes (field `e`) of a change record's fields. */
function recordData(fields: (Buffer | string)[]): Buffer | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i]?.toString() === "e") return fields[i + 1] as Buffer;
  return undefined;
}

/** The event of a change record with its revision and its object's resourceVersion set, by decoding and encoding it. */
function reencode(data: Uint8Array, rev: number): Uint8Array {
  const ev = decodeEvent(data);
  ev.revision = rev;
  const meta = ev.object?.kind?.value.metadata;
  if (meta) meta.resourceVersion = String(rev);
  return encodeEvent(ev);
}

const utf8 = new TextDecoder();

/** Why JetStream did not store the message published as `rev` (undefined: stored at sequence `rev`). */
export function ackRefusal(m: Msg | undefined, rev: number): string | undefined {
  if (!m) return "no ack in time";
  if (m.headers?.hasError) return `status ${m.headers.code} ${m.headers.description}`;
  if (m.data.length === 0) return "empty ack";
  let ack: { seq?: number; duplicate?: boolean; error?: { description?: string } };
  try {
    ack = JSON.parse(utf8.decode(m.data)) as typeof ack;
  } catch {
    return "unreadable ack";
  }
  if (ack.error) return ack.error.description ?? "error";
  if (ack.seq !== rev) return `stored at sequence ${ack.seq} instead of ${rev}`;
  return undefined;
}
