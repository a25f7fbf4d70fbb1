import { performance } from "node:perf_hooks";

/** The longest delay setTimeout accepts (about 24.8 days). */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

interface Entry<K> {
  key: K;
  at: number;
}

/**
 * Keys due at a time, with one timer for the earliest: a binary min-heap on
 * the due time plus a key → slot index, so scheduling, rescheduling and
 * deleting are O(log n) and many thousands of pending keys cost one timer.
 * A key is held at most once; scheduling it again keeps the earlier time.
 * Due keys are passed to `onReady` in due-time order.
 */
export class TimerHeap<K> {
  private readonly heap: Entry<K>[] = [];
  private readonly index = new Map<K, number>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;

  /**
   * @param onReady called with each key once its time has come
   * @param now the clock in ms (default `performance.now`, monotonic)
   */
  constructor(
    private readonly onReady: (key: K) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** How many keys wait. */
  get size(): number {
    return this.heap.length;
  }

  /** Whether `key` waits. */
  has(key: K): boolean {
    return this.index.has(key);
  }

  /** When `key` is due (clock ms), or undefined. */
  dueAt(key: K): number | undefined {
    const i = this.index.get(key);
    return i === undefined ? undefined : this.heap[i]!.at;
  }

  /** The earliest waiting key and its due time. */
  peek(): { key: K; at: number } | undefined {
    const top = this.heap[0];
    return top ? { key: top.key, at: top.at } : undefined;
  }

  /** Schedules `key` in `ms`; if it already waits, the earlier of both times wins. */
  scheduleIn(key: K, ms: number): void {
    this.schedule(key, this.now() + Math.max(0, ms));
  }

  /** Schedules `key` at clock time `at`; if it already waits, the earlier time wins. */
  schedule(key: K, at: number): void {
    const i = this.index.get(key);
    if (i === undefined) {
      this.heap.push({ key, at });
      this.index.set(key, this.heap.length - 1);
      this.up(this.heap.length - 1);
    } else if (at < this.heap[i]!.at) {
      this.heap[i]!.at = at;
      this.up(i);
    } else {
      return;
    }
    this.arm();
  }

  /** Removes `key`; true if it waited. */
  delete(key: K): boolean {
    const i = this.index.get(key);
    if (i === undefined) return false;
    this.removeAt(i);
    this.arm();
    return true;
  }

  /** Removes every key and stops the timer. */
  clear(): void {
    this.heap.length = 0;
    this.index.clear();
    this.disarm();
  }

  /** Hands every due key to `onReady` now (the timer calls this; tests may too). */
  fire(): void {
    this.disarm();
    // setTimeout may fire up to a millisecond early against the clock.
    const limit = this.now() + 1;
    const due: K[] = [];
    while (this.heap.length > 0 && this.heap[0]!.at <= limit) {
      due.push(this.heap[0]!.key);
      this.removeAt(0);
    }
    this.arm();
    for (const key of due) this.onReady(key);
  }

  private arm(): void {
    const top = this.heap[0];
    if (!top) {
      this.disarm();
      return;
    }
    if (this.timer !== undefined && this.timerAt === top.at) return;
    this.disarm();
    const delay = Math.min(MAX_TIMEOUT_MS, Math.max(0, Math.ceil(top.at - this.now())));
    this.timerAt = top.at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      this.fire();
    }, delay);
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private removeAt(i: number): void {
    const last = this.heap.length - 1;
    const removed = this.heap[i]!;
    this.index.delete(removed.key);
    if (i !== last) {
      const moved = this.heap[last]!;
      this.heap[i] = moved;
      this.index.set(moved.key, i);
      this.heap.pop();
      this.down(i);
      this.up(i);
    } else {
      this.heap.pop();
    }
  }

  private up(i: number): void {
    const h = this.heap;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p]!.at <= h[i]!.at) break;
      this.swap(i, p);
      i = p;
    }
  }

  private down(i: number): void {
    const h = this.heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && h[l]!.at < h[m]!.at) m = l;
      if (r < h.length && h[r]!.at < h[m]!.at) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }

  private swap(a: number, b: number): void {
    const h = this.heap;
    const x = h[a]!;
    const y = h[b]!;
    h[a] = y;
    h[b] = x;
    this.index.set(y.key, a);
    this.index.set(x.key, b);
  }
}
