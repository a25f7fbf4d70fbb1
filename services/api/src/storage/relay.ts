import { jetstream, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Redis } from "ioredis";
import { headers } from "@nats-io/transport-node";
import { decodeEvent, encodeEvent, EVENT_SIGNATURE_HEADER, noticeSubjectOf, streamState, type EventSigner } from "@choreo/kit/bus";
import type { Logger } from "@choreo/kit/log";
import { sleep } from "@choreo/kit/lifecycle";
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
}

const LEASE_MS = 5_000;

/**
 * Publishes the change records from Redis to the event log, in revision
 * order, exactly once: each publish expects the stream's last sequence to be
 * revision-1, so the stream sequence equals the revision and a repeated
 * publish (after a crash) is refused instead of duplicated. Records are
 * trimmed from Redis only after JetStream acknowledged them.
 */
export class Relay {
  readonly name = "relay";
  private readonly js: JetStreamClient;
  private batches = 0;

  constructor(private readonly opts: RelayOptions) {
    this.js = jetstream(opts.nc);
  }

  async start(signal: AbortSignal): Promise<void> {
    const blocker = this.opts.redis.duplicate();
    const log = this.opts.log;
    // The main connection's listener is not copied: unheard, each failed reconnect went to stderr (the main one logs them).
    blocker.on("error", () => undefined);
    try {
      while (!signal.aborted) {
        try {
          if (!(await this.holdLease())) {
            await sleep(1_000, signal);
            continue;
          }
          const published = (await streamState(this.opts.jsm)).lastRevision;
          const sent = await this.publishFrom(published);
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
      blocker.disconnect();
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

  /** Publishes the records after `published`; returns how many went out. */
  private async publishFrom(published: number): Promise<number> {
    const r = this.opts.redis;
    // Records at or below the stream's last sequence are already published
    // (a crash between publish and trim): drop them.
    await r.xtrim(CHANGES_KEY, "MINID", `${published + 1}-0`);
    const entries = await r.xrangeBuffer(CHANGES_KEY, `${published + 1}-0`, "+", "COUNT", this.opts.batch ?? 512);
    this.opts.onBacklog?.(await r.xlen(CHANGES_KEY));
    if (entries.length === 0) return 0;
    this.batches++;
    const every = this.opts.crashBeforePublishEvery;
    if (every && this.batches % every === 0) process.kill(process.pid, "SIGKILL");

    const acks: Promise<unknown>[] = [];
    const subjects: string[] = [];
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
      const ev = decodeEvent(data ?? Buffer.alloc(0));
      ev.revision = rev;
      const meta = ev.object?.kind?.value.metadata;
      if (meta) meta.resourceVersion = String(rev);
      const bytes = encodeEvent(ev);
      let hdrs;
      if (this.opts.signer) {
        hdrs = headers();
        hdrs.set(EVENT_SIGNATURE_HEADER, this.opts.signer.sign(bytes));
      }
      acks.push(this.js.publish(subject, bytes, { expect: { lastSequence: rev - 1 }, headers: hdrs }));
      subjects.push(subject);
      expected = rev;
    }
    const results = await Promise.allSettled(acks);
    let ok = 0;
    for (const res of results) {
      if (res.status === "rejected") {
        this.opts.log.warn({ err: res.reason }, "publish refused; re-reading the stream");
        break;
      }
      ok++;
    }
    // ConfigMap and Secret notices (no body) for node agents, which may not read those events.
    for (const subject of subjects.slice(0, ok)) {
      const notice = noticeSubjectOf(subject);
      if (notice) this.opts.nc.publish(notice);
    }
    const after = this.opts.crashAfterPublishEvery;
    if (after && this.batches % after === 0) process.kill(process.pid, "SIGKILL");
    if (ok > 0) await r.xtrim(CHANGES_KEY, "MINID", `${published + ok + 1}-0`);
    this.opts.onPublished?.(ok);
    return ok;
  }
}
