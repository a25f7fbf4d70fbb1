// The loop the api's own caches of the registry run (the node authorizer's
// pod graph, the node credentials): list, then watch from the list's
// revision; a watch that ends resumes from the last revision seen, one that
// fails (410 Expired, an ERROR event) relists after a backoff (doubling to
// 5 s). `waitSynced` resolves after the first list — the doors open then.
// While `stale()` (nats-server away: the store takes writes the watch cannot
// show) it relists every `stalePollMs`, as the RBAC cache does.
import { isExpired } from "@choreo/kit";
import { sleep } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";

export interface ListWatchLoopOptions {
  log: Logger;
  /** Backoff before a relist after a failure (doubles up to 5 s; default 200 ms). */
  retryMs?: number;
  /** True while the watch may lag the store: every `stalePollMs` (default 1 s) it lists again. */
  stale?: () => boolean;
  stalePollMs?: number;
}

/** A cache kept by list + watch: subclasses say how to list (returning the list's revision) and how to apply a watch. */
export abstract class ListWatchLoop {
  private listed = false;
  private waiters: (() => void)[] = [];
  private watchAbort = new AbortController();
  private relistWanted = false;
  /** Lists made (1 + relists): for tests and logs. */
  lists = 0;

  /** `what` names the cache in logs and errors ("node graph"). */
  protected constructor(
    private readonly loop: ListWatchLoopOptions,
    private readonly what: string,
  ) {}

  /** Lists everything, replacing the cache; returns the list's revision. */
  protected abstract list(): Promise<string>;
  /** Applies changes after `revision` until the watch ends; returns the last revision seen. Throws on an ERROR event. */
  protected abstract watch(revision: string, signal: AbortSignal): Promise<string>;

  synced(): boolean {
    return this.listed;
  }

  waitSynced(signal?: AbortSignal): Promise<void> {
    if (this.listed) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiters.push(resolve);
      signal?.addEventListener("abort", () => reject(new Error(`aborted before the first list of the ${this.what}`)), { once: true });
    });
  }

  /** Lists and watches until `signal` aborts. */
  async start(signal: AbortSignal): Promise<void> {
    const base = this.loop.retryMs ?? 200;
    const poll = this.loop.stale ? this.pollWhileStale(this.loop.stale, signal) : Promise.resolve();
    let failures = 0;
    let revision = "";
    while (!signal.aborted) {
      try {
        if (!revision || this.relistWanted) {
          this.relistWanted = false;
          revision = await this.relist();
        }
        this.watchAbort = new AbortController();
        revision = await this.watch(revision, AbortSignal.any([signal, this.watchAbort.signal]));
        failures = 0;
      } catch (err) {
        if (signal.aborted) break;
        revision = "";
        if (this.relistWanted) continue;
        failures++;
        if (isExpired(err)) this.loop.log.info({}, `${this.what} revision expired; relisting`);
        else this.loop.log.warn({ err, failures }, `${this.what} list/watch failed; relisting`);
        await sleep(Math.min(5_000, base * 2 ** (failures - 1)), signal);
      }
    }
    await poll;
  }

  /** Lists again now and watches from that list (the running watch ends): it may have missed changes. */
  relistNow(): void {
    this.relistWanted = true;
    this.watchAbort.abort();
  }

  private async relist(): Promise<string> {
    const revision = await this.list();
    this.lists++;
    if (!this.listed) {
      this.listed = true;
      for (const w of this.waiters.splice(0)) w();
    }
    return revision;
  }

  private async pollWhileStale(stale: () => boolean, signal: AbortSignal): Promise<void> {
    while (await sleep(this.loop.stalePollMs ?? 1_000, signal)) if (stale()) this.relistNow();
  }
}
