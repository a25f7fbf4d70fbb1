/**
 * What a reconcile asks for next. Empty (or `void`): done, forget the key's
 * failures. `requeueAfterMs > 0`: look again after that long (wins over
 * `requeue`). `requeue`: look again after the rate limiter's backoff.
 */
export interface Result {
  requeueAfterMs?: number;
  requeue?: boolean;
}

/** The key is reconciled; nothing more to do until something changes. */
export function done(): Result {
  return {};
}

/** Look at the key again after `ms` (failures are forgotten). */
export function requeueAfter(ms: number): Result {
  return { requeueAfterMs: ms };
}

/** Look at the key again after the rate limiter's backoff (counts as a failure). */
export function requeue(): Result {
  return { requeue: true };
}

/**
 * An error retrying cannot fix (a spec that will never be valid): the
 * controller logs it and forgets the key instead of retrying.
 */
export class TerminalError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "TerminalError";
  }
}

/** Whether `err` is, or wraps (through `cause`), a {@link TerminalError}. */
export function isTerminalError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 16; e = e.cause, depth++) {
    if (e instanceof TerminalError) return true;
  }
  return false;
}
