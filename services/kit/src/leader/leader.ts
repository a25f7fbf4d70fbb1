import { ApiError } from "../api/errors.js";
import { emptyMeta } from "../api/kinds.js";
import type { ApiClient } from "../client/index.js";
import type { Lease } from "../gen/choreo/coordination/v1/coordination.js";
import type { Logger } from "../log/index.js";
import { orAbort, sleep } from "../lifecycle/index.js";

/** Options of leader election (client-go's LeaderElectionConfig). */
export interface LeaderOptions {
  client: ApiClient;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log: Logger;
  /** Runs while this candidate leads; its signal aborts when leadership is lost. */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  onStoppedLeading?(): void;
}

function microTime(ms = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/**
 * Leader election on a Lease object with optimistic concurrency: a candidate
 * takes the lease when it is free or its holder stopped renewing for a lease
 * duration (measured on this candidate's clock, from when it last saw the
 * lease change, so clock skew between machines does not matter).
 */
export class LeaderElector {
  readonly name: string;
  private observedRv = "";
  private observedAt = 0;
  private leading = false;
  /** When this leader last renewed its lease (Date.now()). */
  private renewedAt = 0;

  constructor(private readonly opts: LeaderOptions) {
    this.name = `leader-${opts.name}`;
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * The `leader-election` health check (client-go's HealthzAdaptor): a standby
   * is healthy; a leader is while its last renewal is within the lease duration.
   */
  leaseHealthy(): boolean {
    return !this.leading || Date.now() - this.renewedAt <= this.durationMs;
  }

  private get durationMs(): number {
    return this.opts.leaseDurationMs ?? 15_000;
  }

  /** One attempt: true when this candidate holds the lease afterwards. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { client, namespace, name, identity } = this.opts;
    const lease = client.typed("lease");
    const now = Date.now();
    let cur: Lease;
    try {
      cur = await lease.get(namespace, name);
    } catch (err) {
      if (!(err instanceof ApiError && err.reason === "NotFound")) throw err;
      try {
        const created = await lease.create({
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: emptyMeta({ name, namespace }),
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: Math.ceil(this.durationMs / 1000),
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaseTransitions: 0,
          },
        });
        this.observe(created, now);
        return true;
      } catch (e) {
        if (e instanceof ApiError && e.reason === "AlreadyExists") return false;
        throw e;
      }
    }
    if (cur.metadata?.resourceVersion !== this.observedRv) this.observe(cur, now);
    const holder = cur.spec?.holderIdentity ?? "";
    const mine = holder === identity;
    if (holder && !mine && now < this.observedAt + this.durationMs) return false;
    const next = structuredClone(cur);
    const spec = (next.spec ??= { acquireTime: "", renewTime: "" });
    if (!mine) {
      spec.acquireTime = microTime(now);
      spec.leaseTransitions = (spec.leaseTransitions ?? 0) + 1;
    }
    spec.holderIdentity = identity;
    spec.leaseDurationSeconds = Math.ceil(this.durationMs / 1000);
    spec.renewTime = microTime(now);
    try {
      this.observe(await lease.update(next), now);
      return true;
    } catch (err) {
      if (err instanceof ApiError && err.reason === "Conflict") return false;
      throw err;
    }
  }

  private observe(l: Lease, at: number): void {
    this.observedRv = l.metadata?.resourceVersion ?? "";
    this.observedAt = at;
  }

  async start(signal: AbortSignal): Promise<void> {
    const retry = this.opts.retryPeriodMs ?? 2_000;
    const deadline = this.opts.renewDeadlineMs ?? 10_000;
    let led = false;
    while (!signal.aborted) {
      const acquired = await orAbort(this.attempt(), signal);
      if (acquired === undefined) break;
      if (!acquired) {
        await sleep(retry, signal);
        continue;
      }
      this.leading = led = true;
      this.renewedAt = Date.now();
      this.opts.log.info({ lease: this.opts.name, identity: this.opts.identity }, "started leading");
      const lead = new AbortController();
      const stopLead = (): void => lead.abort();
      signal.addEventListener("abort", stopLead, { once: true });
      const work = Promise.resolve(this.opts.onStartedLeading(lead.signal)).catch((err: unknown) => this.opts.log.error({ err }, "leader work failed"));
      let renewed = Date.now();
      while (!signal.aborted) {
        await sleep(retry, signal);
        if (signal.aborted) break;
        // A renewal the api does not answer (it or the bus down) is not waited out once stopping.
        const ok = await orAbort(this.attempt(), signal);
        if (ok === undefined) break;
        if (ok) renewed = this.renewedAt = Date.now();
        else if (Date.now() - renewed > deadline || !(await this.stillMine())) break;
      }
      this.leading = false;
      lead.abort();
      signal.removeEventListener("abort", stopLead);
      await work;
      this.opts.log.info({ lease: this.opts.name, identity: this.opts.identity }, "stopped leading");
      this.opts.onStoppedLeading?.();
    }
    // Released on the way out, for at most RELEASE_MS: with the api or the bus down, a stopping
    // process does not wait out two request timeouts (the others then wait the lease's duration).
    if (led) await withinMs(this.release(), RELEASE_MS);
  }

  private async attempt(): Promise<boolean> {
    try {
      return await this.tryAcquireOrRenew();
    } catch (err) {
      this.opts.log.warn({ err }, "lease attempt failed");
      return false;
    }
  }

  private async stillMine(): Promise<boolean> {
    try {
      const l = await this.opts.client.typed("lease").get(this.opts.namespace, this.opts.name);
      return l.spec?.holderIdentity === this.opts.identity;
    } catch {
      return true; // unknown: keep leading until the deadline says otherwise
    }
  }

  /** Gives the lease up so another candidate need not wait a full duration (an unanswered release is left to expire). */
  private async release(): Promise<void> {
    const lease = this.opts.client.typed("lease");
    const cur = await lease.get(this.opts.namespace, this.opts.name);
    if (cur.spec?.holderIdentity !== this.opts.identity) return;
    const next = structuredClone(cur);
    if (next.spec) {
      next.spec.holderIdentity = "";
      next.spec.renewTime = microTime();
    }
    await lease.update(next);
  }
}

/** How long a stopping candidate tries to release its lease. */
const RELEASE_MS = 2_000;

/** Waits for `p` at most `ms`; never rejects. */
async function withinMs(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
