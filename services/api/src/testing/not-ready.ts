// A runnable waiting on a watch cache that never becomes ready (one that failed at start) must still return
// once aborted: the api's stop does not wait on it.
import assert from "node:assert/strict";

/** What a watch cache that failed at start looks like to those waiting on it: `ready` never settles. */
export function neverReadyWatch(): { ready: Promise<void> } {
  return { ready: new Promise<void>(() => undefined) };
}

/** Starts `start`, checks that it is still waiting 20 ms later, aborts it, and waits for it to return. */
export async function returnsOnAbortBeforeReady(start: (signal: AbortSignal) => Promise<unknown>): Promise<void> {
  const ac = new AbortController();
  let stopped = false;
  const running = start(ac.signal).then(() => (stopped = true));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(stopped, false, "returned before the abort");
  ac.abort();
  await running;
}
