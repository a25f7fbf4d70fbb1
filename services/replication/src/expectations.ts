// Controller expectations (client-go's ControllerExpectations): after a
// controller asks for N creations or deletions it waits until its informer
// has observed them before counting pods again, so a stale cache never makes
// it create or delete twice. Expectations expire (the controller re-lists the
// truth) so a lost event cannot wedge a controller forever.

/** How long expectations hold before the controller stops waiting for them. */
export const EXPECTATIONS_TTL_MS = 5 * 60_000;

interface Pending {
  adds: number;
  dels: Set<string>;
  at: number;
}

/** Per controller key: creations still to observe, and uids whose deletion is still to observe. */
export class Expectations {
  private readonly pending = new Map<string, Pending>();

  constructor(
    private readonly ttlMs = EXPECTATIONS_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether the controller may trust its cache for `key` (nothing pending, or the wait expired). */
  satisfied(key: string): boolean {
    const p = this.pending.get(key);
    if (!p) return true;
    if ((p.adds <= 0 && p.dels.size === 0) || this.now() - p.at > this.ttlMs) {
      this.pending.delete(key);
      return true;
    }
    return false;
  }

  /** The controller is about to create `n` pods for `key`. */
  expectCreations(key: string, n: number): void {
    const p = this.entry(key);
    p.adds += n;
  }

  /** The controller is about to delete the pods with these uids for `key`. */
  expectDeletions(key: string, uids: Iterable<string>): void {
    const p = this.entry(key);
    for (const u of uids) p.dels.add(u);
  }

  /** A pod of `key` was seen created (or a create failed: nothing will be seen). */
  creationObserved(key: string): void {
    const p = this.pending.get(key);
    if (p && p.adds > 0) p.adds--;
  }

  /** The pod `uid` of `key` was seen deleted (or the delete failed). */
  deletionObserved(key: string, uid: string): void {
    this.pending.get(key)?.dels.delete(uid);
  }

  /** Forget `key` (its controller was deleted). */
  forget(key: string): void {
    this.pending.delete(key);
  }

  /** Creations and deletions still pending for `key` (for logs and tests). */
  pendingOf(key: string): { adds: number; dels: number } {
    const p = this.pending.get(key);
    return { adds: p?.adds ?? 0, dels: p?.dels.size ?? 0 };
  }

  private entry(key: string): Pending {
    let p = this.pending.get(key);
    if (!p || (p.adds <= 0 && p.dels.size === 0)) {
      p = { adds: 0, dels: new Set(), at: this.now() };
      this.pending.set(key, p);
    }
    p.at = this.now();
    return p;
  }
}

/** The outcome of {@link slowStartBatch}. */
export interface SlowStartResult {
  /** Calls that succeeded. */
  ok: number;
  /** Calls made (the rest were skipped after a failing batch). */
  attempted: number;
  /** The first error. */
  error?: unknown;
}

/**
 * Slow start (Kubernetes' slowStartBatch): run `count` calls in batches of 1,
 * 2, 4, … capped at `burst`, stopping at the first batch with a failure, so a
 * quota or validation error costs one call instead of `count`. Every sync
 * starts over at 1, as in Kubernetes (resuming at the previous sync's size was
 * measured: no faster on the api-bound benchmark, and pods created 500 at once
 * waited 2–3× longer to start — bench/RESULTS.md, issue 15).
 */
export async function slowStartBatch(count: number, burst: number, fn: (i: number) => Promise<void>): Promise<SlowStartResult> {
  let ok = 0;
  let size = 1;
  let i = 0;
  while (i < count) {
    const n = Math.min(size, count - i, burst);
    const results = await Promise.allSettled(Array.from({ length: n }, (_, j) => fn(i + j)));
    let error: unknown;
    for (const r of results) {
      if (r.status === "fulfilled") ok++;
      else error ??= r.reason;
    }
    i += n;
    if (error !== undefined) return { ok, attempted: i, error };
    size *= 2;
  }
  return { ok, attempted: i };
}
