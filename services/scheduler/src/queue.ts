// The scheduling queue, after Kubernetes': an active heap ordered by
// priority (desc) then creation, a back-off area, and an unschedulable
// area whose pods move back only when the cluster changes (a node added or
// changed, a pod deleted) — a "move request". A move that lands while a pod
// is being tried sends it to back-off instead of unschedulable, so no
// wake-up is lost.

export interface QueuedPod {
  key: string;
  priority: number;
  created: string;
}

interface Entry extends QueuedPod {
  attempts: number;
}

export interface QueueOptions {
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

const before = (a: QueuedPod, b: QueuedPod) =>
  a.priority !== b.priority ? a.priority > b.priority : a.created !== b.created ? a.created < b.created : a.key < b.key;

export class SchedulingQueue {
  private heap: Entry[] = [];
  private readonly entries = new Map<string, Entry>();
  private readonly where = new Map<string, "active" | "backoff" | "unschedulable" | "inflight">();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private waiters: ((e: Entry | undefined) => void)[] = [];
  private moveCycle = 0;
  private readonly popCycle = new Map<string, number>();
  private closed = false;

  constructor(private readonly opts: QueueOptions = {}) {}

  /** Adds or refreshes an unbound pod; a pod in the unschedulable area moves to active (its spec may have changed). */
  add(p: QueuedPod): void {
    if (this.closed) return;
    const e = this.entries.get(p.key);
    if (e) {
      e.priority = p.priority;
      e.created = p.created;
      if (this.where.get(p.key) === "unschedulable") this.activate(e);
      return;
    }
    const fresh = { ...p, attempts: 0 };
    this.entries.set(p.key, fresh);
    this.activate(fresh);
  }

  /** Forgets a pod (bound or deleted). */
  delete(key: string): void {
    const w = this.where.get(key);
    this.entries.delete(key);
    this.where.delete(key);
    this.popCycle.delete(key);
    clearTimeout(this.timers.get(key));
    this.timers.delete(key);
    if (w === "active") {
      this.heap = this.heap.filter((e) => e.key !== key);
      heapify(this.heap);
    }
  }

  /** The cluster changed: unschedulable pods get another try (after their back-off). */
  moveAll(): void {
    this.moveCycle++;
    for (const [key, w] of this.where) if (w === "unschedulable") this.toBackoff(this.entries.get(key)!);
  }

  /** The next pod to try; undefined once closed. The pod stays "in flight" until done/unschedulable/retry. */
  async pop(): Promise<QueuedPod | undefined> {
    const e = this.heap.length ? heapPop(this.heap) : this.closed ? undefined : await new Promise<Entry | undefined>((r) => this.waiters.push(r));
    if (!e) return undefined;
    this.where.set(e.key, "inflight");
    this.popCycle.set(e.key, this.moveCycle);
    return { key: e.key, priority: e.priority, created: e.created };
  }

  /** Scheduled (or dropped): forget it. */
  done(key: string): void {
    this.delete(key);
  }

  /** Fits nowhere: wait for a cluster change (or back off, if one came while it was tried). */
  unschedulable(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    e.attempts++;
    if ((this.popCycle.get(key) ?? -1) < this.moveCycle) this.toBackoff(e);
    else this.where.set(key, "unschedulable");
  }

  /** A transient failure: try again after back-off. */
  retry(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    e.attempts++;
    this.toBackoff(e);
  }

  pending(): { active: number; backoff: number; unschedulable: number; inflight: number } {
    const c = { active: 0, backoff: 0, unschedulable: 0, inflight: 0 };
    for (const w of this.where.values()) c[w]++;
    return c;
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers.values()) clearTimeout(t);
    for (const w of this.waiters.splice(0)) w(undefined);
  }

  private backoffMs(e: Entry): number {
    const initial = this.opts.initialBackoffMs ?? 1_000;
    return Math.min(this.opts.maxBackoffMs ?? 10_000, initial * 2 ** Math.max(0, e.attempts - 1));
  }

  private toBackoff(e: Entry): void {
    this.where.set(e.key, "backoff");
    clearTimeout(this.timers.get(e.key));
    this.timers.set(
      e.key,
      setTimeout(() => {
        this.timers.delete(e.key);
        if (this.entries.get(e.key) === e && this.where.get(e.key) === "backoff") this.activate(e);
      }, this.backoffMs(e)),
    );
  }

  private activate(e: Entry): void {
    clearTimeout(this.timers.get(e.key));
    this.timers.delete(e.key);
    this.where.set(e.key, "active");
    const w = this.waiters.shift();
    if (w) w(e);
    else heapPush(this.heap, e);
  }
}

function heapPush(h: Entry[], e: Entry): void {
  h.push(e);
  let i = h.length - 1;
  while (i > 0) {
    const p = (i - 1) >> 1;
    if (!before(h[i]!, h[p]!)) break;
    [h[i], h[p]] = [h[p]!, h[i]!];
    i = p;
  }
}

function heapPop(h: Entry[]): Entry | undefined {
  const top = h[0];
  const last = h.pop();
  if (h.length && last) {
    h[0] = last;
    siftDown(h, 0);
  }
  return top;
}

function siftDown(h: Entry[], i: number): void {
  for (;;) {
    const l = 2 * i + 1;
    const r = l + 1;
    let m = i;
    if (l < h.length && before(h[l]!, h[m]!)) m = l;
    if (r < h.length && before(h[r]!, h[m]!)) m = r;
    if (m === i) return;
    [h[i], h[m]] = [h[m]!, h[i]!];
    i = m;
  }
}

function heapify(h: Entry[]): void {
  for (let i = (h.length >> 1) - 1; i >= 0; i--) siftDown(h, i);
}
