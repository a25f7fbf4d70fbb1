// The node agent's cheap time, for processes hosting thousands of hollow
// nodes: timers that share one Node timer per slot, and "now" as RFC 3339
// formatted once per second.

/**
 * The timers due in one slot (by the slot's end, ms since the epoch): one Node
 * timer fires them all, in the order they were set.
 */
interface Slot {
  fns: ((() => void) | undefined)[];
  /** Callbacks not cancelled yet: the Node timer is cleared when none is left. */
  live: number;
  timer: NodeJS.Timeout;
}

const slots = new Map<number, Map<number, Slot>>();

/**
 * Calls `fn` once `ms` have passed, rounded up to the end of a `slotMs` slot
 * (so `ms` to `ms + slotMs` later): every callback due in one slot runs from
 * one Node timer, one after another in one macrotask. What they send on the
 * bus then leaves in one socket write (nats.js writes what a task queued when
 * its microtasks are done), where a timer per callback wakes the process and
 * writes once per request — thousands of hollow nodes each renewing a Lease,
 * checking their Node and starting pods after a delay. Returns the cancel.
 * An uncaught exception of one callback is rethrown after the others ran.
 */
export function slottedTimeout(fn: () => void, ms: number, slotMs: number): () => void {
  const now = Date.now();
  const due = Math.ceil((now + Math.max(0, ms)) / slotMs) * slotMs;
  let bySlot = slots.get(slotMs);
  if (!bySlot) slots.set(slotMs, (bySlot = new Map()));
  let slot = bySlot.get(due);
  if (!slot) {
    const s: Slot = { fns: [], live: 0, timer: setTimeout(() => fire(slotMs, due, s), due - now) };
    bySlot.set(due, (slot = s));
  }
  const s = slot;
  const i = s.fns.push(fn) - 1;
  s.live++;
  return () => {
    if (s.fns[i] === undefined) return;
    s.fns[i] = undefined;
    if (--s.live > 0) return;
    // Nothing left to run: no Node timer keeps the process up for it (a resync 5 minutes away, at shutdown).
    clearTimeout(s.timer);
    if (slots.get(slotMs)?.get(due) === s) slots.get(slotMs)?.delete(due);
  };
}

function fire(slotMs: number, due: number, s: Slot): void {
  if (slots.get(slotMs)?.get(due) === s) slots.get(slotMs)?.delete(due);
  const errors: unknown[] = [];
  for (let i = 0; i < s.fns.length; i++) {
    const fn = s.fns[i];
    if (!fn) continue;
    s.fns[i] = undefined;
    s.live--;
    try {
      fn();
    } catch (err) {
      errors.push(err);
    }
  }
  for (const err of errors)
    queueMicrotask(() => {
      throw err;
    });
}

/**
 * Resolves true after `ms` (rounded up to a `slotMs` slot, as
 * {@link slottedTimeout}), false at once when `signal` aborts first.
 */
export function slottedSleep(ms: number, slotMs: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve(false);
      return;
    }
    const onAbort = (): void => {
      cancel();
      resolve(false);
    };
    const cancel = slottedTimeout(
      () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(true);
      },
      ms,
      slotMs,
    );
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

let second = NaN;
let secondText = "";

/**
 * Now as RFC 3339 to the second (kit's `nowRfc3339`, the same text), formatted
 * once per second: a hollow pod's status and runtime state ask for it several
 * times per pod.
 */
export function nowRfc3339Cached(ms: number = Date.now()): string {
  const s = Math.floor(ms / 1000);
  if (s !== second) {
    second = s;
    secondText = new Date(s * 1000).toISOString().replace(".000Z", "Z");
  }
  return secondText;
}
