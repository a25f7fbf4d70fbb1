// Recovery of Redis against the event log. Redis takes every write first and
// the relay publishes it, so the log's last sequence is never above Redis'
// revision — unless Redis lost its tail: an older AOF restored, a power cut
// within appendfsync's second. Then the log holds revisions Redis does not,
// and a write now would take one of those revisions for another change.
//
// The repair: the store is fenced (reads and writes answer 503) while its
// revision is below the log's last sequence as this replica knows it; the
// missing revisions are read back from the log, in order, and put back at
// their revisions with their index entries (a Service takes its ClusterIP
// and node ports again). It runs before the api serves, again whenever the
// store answers from behind the log (a Redis restarted with an older AOF
// under a running api), and once per Redis reconnection. One replica repairs
// at a time (a lock, renewed while it works, so that a replica killed
// mid-repair holds it for seconds only); putting a change back is idempotent,
// so a repair repeated after a crash changes nothing more. A rebuild (a split
// brain, see `rebuild`) first wipes the store; a marker key says the wipe is
// not finished, and whichever repair runs next does it again. Redis ahead of
// the log is the ordinary case: the relay publishes the rest.
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Redis } from "ioredis";
import { randomUUID } from "node:crypto";
import { kindOf } from "@choreo/kit";
import { ALL_EVENTS, consumeEvents, streamState, type EventVerifier, type SignedEventsPolicy } from "@choreo/kit/bus";
import { Object as ObjectMsg, type WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Logger } from "@choreo/kit/log";
import { sleep } from "@choreo/kit/lifecycle";
import type { GenericStore } from "../registry/generic/store.js";
import { API_MEMBERS_KEY, FENCE_KEY, REBUILD_KEY, RELAY_LOCK_KEY, REPAIR_LOCK_KEY, REV_KEY } from "./keys.js";
import type { IndexEntry, ObjectStorage } from "./object-storage.js";

/** The repair lock's lifetime; its holder renews it every third of it, so a dead holder's lock is gone within it. */
const LOCK_MS = 10_000;
/** Kept by a rebuild's wipe: the repair's own state, and the liveness keys of the relay and the api replicas. */
const KEPT_BY_WIPE = new Set([FENCE_KEY, REBUILD_KEY, REPAIR_LOCK_KEY, RELAY_LOCK_KEY, API_MEMBERS_KEY]);
/** A rebuild's fence: above any revision, so no write is applied to the store it is about to wipe. */
const FENCE_ALL = String(Number.MAX_SAFE_INTEGER);
/** Raises the fence to ARGV[1] (a lost-tail repair never lowers a rebuild's fence). */
const RAISE_FENCE = "if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end return 1";
/** PEXPIRE of a lock still held with `token`. */
const RENEW_LOCK = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";

export interface RecoveryOptions {
  /** For the fence and the repair lock. */
  redis: Redis;
  nc: NatsConnection;
  jsm: JetStreamManager;
  /** The registry's store: decoding, strategies (index entries), and its storage. */
  registry: GenericStore;
  log: Logger;
  /**
   * Only the api's signed messages are put back (the relay signs every one):
   * a message in the log without the api's signature, or not at the sequence
   * of its revision, stops the repair and the store stays fenced. Without it
   * (no signing) every message is trusted.
   */
  verifier?: EventVerifier;
  /** The repair lock's lifetime (default 10 s): how long a replica killed mid-repair holds the others back. */
  lockMs?: number;
}

/** What one check found and did. */
export interface RepairResult {
  /** Redis' revision before. */
  storeRevision: number;
  /** The log's last sequence. */
  logRevision: number;
  /** Changes put back (0: nothing was missing). */
  restored: number;
  ms: number;
}

/** The log holds a message the api did not sign where the store is repaired from it: the store stays fenced. */
export class UntrustedLogError extends Error {
  override name = "UntrustedLogError";
  constructor(what: string) {
    super(`the event log holds a message the api did not sign (${what}): not restored from it; the store stays fenced`);
  }
}

/** The log no longer holds the revisions Redis lost: only a backup of Redis can bring them back. */
export class UnrecoverableError extends Error {
  override name = "UnrecoverableError";
}

export class StoreRecovery {
  /** The log's last sequence as this replica last read it (the store's floor, with the watch cache's). */
  private logRevision = 0;
  private running: Promise<RepairResult> | undefined;
  readonly stats = { repairs: 0, restored: 0, rebuilds: 0 };

  constructor(private readonly opts: RecoveryOptions) {}

  private get storage(): ObjectStorage {
    return this.opts.registry.storage;
  }

  /** The revision below which the store is behind the log, as far as this replica knows. */
  floor(seen = 0): number {
    return Math.max(this.logRevision, seen);
  }

  /** Checks Redis against the log and repairs it; one at a time (a call meanwhile shares the running one). */
  repair(signal?: AbortSignal): Promise<RepairResult> {
    this.running ??= this.run(signal).finally(() => (this.running = undefined));
    return this.running;
  }

  /** Repairs in the background (the store answered from behind the log); failures are logged and retried. */
  repairSoon(signal: AbortSignal): void {
    if (this.running) return;
    void (async () => {
      for (let attempt = 0; !signal.aborted; attempt++) {
        try {
          await this.repair(signal);
          return;
        } catch (err) {
          this.opts.log.error({ err, attempt }, "store repair failed; retrying");
          await sleep(Math.min(5_000, 250 * 2 ** attempt), signal);
        }
      }
    })();
  }

  private async run(signal?: AbortSignal): Promise<RepairResult> {
    const t0 = Date.now();
    const log = this.opts.log;
    const redis = this.opts.redis;
    const lockMs = this.opts.lockMs ?? LOCK_MS;
    const state = await streamState(this.opts.jsm);
    this.logRevision = Math.max(this.logRevision, state.lastRevision);
    // A rebuild's wipe not finished (its replica killed part way): the store is wiped again and put back whole.
    const rebuilding = (await redis.exists(REBUILD_KEY)) === 1;
    const storeRevision = await this.storage.currentRevision();
    const result: RepairResult = { storeRevision, logRevision: state.lastRevision, restored: 0, ms: 0 };
    if (!rebuilding && storeRevision >= state.lastRevision) {
      await this.clearFence(storeRevision);
      return { ...result, ms: Date.now() - t0 };
    }
    if (rebuilding && state.firstRevision > 1) {
      log.fatal(
        { firstRevision: state.firstRevision },
        "store rebuild unfinished and the event log no longer holds every revision: restore Redis from a backup",
      );
      throw new UnrecoverableError(`a rebuild of the store was cut short and the event log starts at ${state.firstRevision}: restore Redis from a backup`);
    }
    if (!rebuilding && state.firstRevision > storeRevision + 1) {
      // Revisions storeRevision+1 … firstRevision-1 are gone from both: the store stays fenced.
      const err = new UnrecoverableError(
        `Redis is at revision ${storeRevision} and the event log starts at ${state.firstRevision}: revisions ${storeRevision + 1}-${state.firstRevision - 1} are lost; restore Redis from a backup`,
      );
      log.fatal({ storeRevision, firstRevision: state.firstRevision, lastRevision: state.lastRevision }, "store behind the event log beyond its retention");
      throw err;
    }
    if (rebuilding) log.error({ storeRevision, logRevision: state.lastRevision }, "store rebuild unfinished: wiping the store and restoring it from the log");
    else log.warn({ storeRevision, logRevision: state.lastRevision }, "store behind the event log (lost tail): restoring from the log");
    // Every replica stops writing below the log, not only those that know its last sequence.
    await redis.eval(RAISE_FENCE, 1, FENCE_KEY, String(state.lastRevision));
    const token = randomUUID();
    while (!(await redis.set(REPAIR_LOCK_KEY, token, "PX", lockMs, "NX"))) {
      // Another replica repairs: done when the store has caught up (and its wipe, if any, is done).
      if ((await redis.exists(REBUILD_KEY)) === 0 && (await this.storage.currentRevision()) >= state.lastRevision) return { ...result, ms: Date.now() - t0 };
      await sleep(200, signal);
      if (signal?.aborted) throw new Error("aborted");
    }
    const ac = new AbortController();
    const stop = () => ac.abort();
    signal?.addEventListener("abort", stop, { once: true });
    // Renewed while this replica lives: killed, it holds the others back for one lifetime at most.
    const renew = setInterval(() => void redis.eval(RENEW_LOCK, 1, REPAIR_LOCK_KEY, token, lockMs).catch(() => undefined), Math.max(50, lockMs / 3));
    try {
      if ((await redis.exists(REBUILD_KEY)) === 1) {
        await this.wipe();
        // Wiped: from here the store is a lost tail of the whole log (revision 0), fenced as one.
        await redis.multi().set(FENCE_KEY, String(state.lastRevision)).del(REBUILD_KEY).exec();
      }
      // Resumes where Redis is now: a repair cut short (a crash) left it at the last change put back.
      const from = await this.storage.currentRevision();
      const trust = this.trustPolicy(ac);
      for await (const ev of consumeEvents({
        nc: this.opts.nc,
        jsm: this.opts.jsm,
        filter: ALL_EVENTS,
        fromRevision: from,
        signal: ac.signal,
        policy: trust?.policy,
      })) {
        if (ev.revision > state.lastRevision) break;
        if (await this.restoreEvent(ev)) result.restored++;
        if (ev.revision === state.lastRevision) break;
      }
      if (signal?.aborted) throw new Error("aborted");
      if (trust?.refused) throw new UntrustedLogError(trust.refused);
      const now = await this.storage.currentRevision();
      if (now < state.lastRevision) throw new Error(`repair stopped at revision ${now} of ${state.lastRevision}`);
      await this.clearFence(now);
    } finally {
      clearInterval(renew);
      ac.abort();
      signal?.removeEventListener("abort", stop);
      if ((await redis.get(REPAIR_LOCK_KEY).catch(() => null)) === token) await redis.del(REPAIR_LOCK_KEY).catch(() => undefined);
    }
    this.stats.repairs++;
    this.stats.restored += result.restored;
    result.ms = Date.now() - t0;
    log.warn({ ...result }, "store repaired from the event log");
    return result;
  }

  /**
   * The store gave a revision the log holds to another change (`revision`,
   * found by the relay): a Redis split brain — a killed primary back as a
   * primary before the Sentinels' failover, each primary handing out the
   * same revisions, only one relay's publish stored. The surviving store
   * then lacks the log's (acknowledged) change and holds its own (answered
   * 503 "not recorded" in durability log). Revisions alone cannot show it, so
   * the store is rebuilt from the log: fenced against every write and marked
   * (REBUILD_KEY) in one step, then the repair wipes it under its lock — the
   * revision first, then every `{choreo}:` key but the repair's own and the
   * liveness keys — lowers the fence to the log's last sequence with the
   * mark removed, and puts every change back.
   * Killed at any point, the next repair (at the api's start) finds the mark
   * or a revision below the log's and finishes the job. Only when the log
   * holds every revision (from 1): else it is logged and left, as a backup
   * is the only way back.
   */
  async rebuild(revision: number, signal?: AbortSignal): Promise<RepairResult | undefined> {
    const log = this.opts.log;
    const state = await streamState(this.opts.jsm);
    if (state.firstRevision > 1) {
      log.fatal(
        { revision, firstRevision: state.firstRevision },
        "store diverged from the event log, which no longer holds every revision: not rebuilt; restore Redis from a backup",
      );
      return undefined;
    }
    // Every message must be the api's before the store goes: one that is not would stop the repair half way.
    const refused = await this.untrustedIn(state.lastRevision, signal);
    if (refused) {
      log.fatal({ revision, refused }, "store diverged from the event log, which holds a message without the api's signature: not rebuilt");
      return undefined;
    }
    log.error({ revision, logRevision: state.lastRevision }, "store diverged from the event log: rebuilding it from the log");
    this.logRevision = Math.max(this.logRevision, state.lastRevision);
    // Fenced above any revision and marked in one step: no replica writes to the store that goes (its revision is
    // above the log's, so the log's last sequence would not stop them), and whoever repairs next wipes first.
    await this.opts.redis.multi().set(FENCE_KEY, FENCE_ALL).set(REBUILD_KEY, String(state.lastRevision)).exec();
    this.stats.rebuilds++;
    return this.repair(signal);
  }

  /**
   * Removes the store's state: the revision first (killed part way, the store is at revision 0, never at its old
   * revision with objects gone), then every `{choreo}:` key but the repair's own and the liveness keys.
   */
  private async wipe(): Promise<void> {
    const redis = this.opts.redis;
    await redis.del(REV_KEY);
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", "{choreo}:*", "COUNT", 1_000);
      cursor = next;
      const doomed = keys.filter((k) => !KEPT_BY_WIPE.has(k));
      if (doomed.length > 0) await redis.unlink(...doomed);
    } while (cursor !== "0");
  }

  /** The policy that refuses what is not the api's, and what it refused first (it stops the read). */
  private trustPolicy(ac: AbortController): { policy: SignedEventsPolicy; refused?: string } | undefined {
    const verifier = this.opts.verifier;
    if (!verifier) return undefined;
    const trust: { policy: SignedEventsPolicy; refused?: string } = {
      policy: {
        verifier,
        onRejected: (why, subject, sequence) => {
          trust.refused ??= `${why} at sequence ${sequence}, ${subject}`;
          ac.abort();
        },
      },
    };
    return trust;
  }

  /** The first message up to `last` the api did not sign (as the repair would refuse it), or undefined. */
  private async untrustedIn(last: number, signal?: AbortSignal): Promise<string | undefined> {
    const ac = new AbortController();
    const trust = this.trustPolicy(ac);
    if (!trust || last === 0) return undefined;
    const stop = () => ac.abort();
    signal?.addEventListener("abort", stop, { once: true });
    try {
      for await (const ev of consumeEvents({
        nc: this.opts.nc,
        jsm: this.opts.jsm,
        filter: ALL_EVENTS,
        fromRevision: 0,
        signal: ac.signal,
        policy: trust.policy,
      }))
        if (ev.revision >= last) break;
    } finally {
      ac.abort();
      signal?.removeEventListener("abort", stop);
    }
    if (signal?.aborted) throw new Error("aborted");
    return trust.refused;
  }

  /** The fence goes once the store reached it (a fence above the store would refuse every write). */
  private async clearFence(storeRevision: number): Promise<void> {
    const fence = Number((await this.opts.redis.get(FENCE_KEY)) ?? 0);
    if (fence > 0 && fence <= storeRevision) await this.opts.redis.del(FENCE_KEY);
  }

  /** Puts one change of the log back into the store (with its index entries); false when it was already there. */
  async restoreEvent(ev: WatchEvent): Promise<boolean> {
    const o = ev.object;
    if (!o?.kind || ev.type === "ERROR" || ev.type === "BOOKMARK") return false;
    const reg = this.opts.registry;
    const info = kindOf(o);
    const value = o.kind.value;
    const meta = value.metadata;
    if (!meta) return false;
    const namespace = info.namespaced ? meta.namespace : "";
    const strategy = reg.strategy(info);
    const deleted = ev.type === "DELETED";
    const old = await this.storage.get(info.resource, namespace, meta.name, { unfenced: true });
    const oldIdx = old ? (strategy?.indexes?.(reg.decode(info, old)) ?? {}) : {};
    // The log holds the stored form (a sealed Secret); the indexes are computed on the object, as the write did.
    const opened = reg.fromStorage(info, structuredClone(value));
    const newIdx = deleted ? {} : (strategy?.indexes?.(opened) ?? {});
    const entries = (a: Record<string, string>, b: Record<string, string>): IndexEntry[] =>
      Object.entries(a)
        .filter(([k, x]) => b[k] !== x)
        .map(([index, v]) => ({ index, value: v }));
    const stored = structuredClone(o);
    stored.kind!.value.metadata!.resourceVersion = "";
    const applied = await this.storage.restore({
      mode: deleted ? "delete" : "put",
      resource: info.resource,
      namespace,
      name: meta.name,
      revision: ev.revision,
      object: deleted ? undefined : ObjectMsg.encode(stored).finish(),
      indexAdd: entries(newIdx, oldIdx),
      indexRemove: entries(oldIdx, newIdx),
    });
    if (applied) {
      if (deleted) await strategy?.afterDelete?.(opened);
      else await strategy?.restored?.(opened);
    }
    return applied;
  }
}
