import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { Registry } from "prom-client";
import { createLogger, silentLogger } from "../log/index.js";
import { waitFor } from "../testing/index.js";
import { exponentialBackoff, WorkQueue } from "../workqueue/index.js";
import { Controller, done, isTerminalError, requeue, requeueAfter, TerminalError, type Result } from "./index.js";

const poll = { timeoutMs: 10_000, intervalMs: 5 };

/** A queue that records the operations the controller performs. */
class SpyQueue extends WorkQueue<string> {
  readonly ops: string[] = [];
  override forget(key: string): void {
    this.ops.push(`forget ${key}`);
    super.forget(key);
  }
  override addAfter(key: string, ms: number): void {
    this.ops.push(`addAfter ${key} ${ms}`);
    super.addAfter(key, ms);
  }
  override addRateLimited(key: string): void {
    this.ops.push(`addRateLimited ${key}`);
    super.addRateLimited(key);
  }
}

/** Runs `fn` with a started controller, then aborts and awaits its drain. */
async function withController(c: Controller, fn: () => Promise<void>): Promise<void> {
  const ac = new AbortController();
  const run = c.start(ac.signal);
  try {
    await fn();
  } finally {
    ac.abort();
    await run;
  }
}

describe("Controller", () => {
  it("maps each Result onto queue operations", async () => {
    const queue = new SpyQueue({ rateLimiter: exponentialBackoff(60_000, 60_000) });
    const results: Record<string, Result | void | Error> = {
      void: undefined,
      done: done(),
      after: requeueAfter(60_000),
      both: { requeue: true, requeueAfterMs: 60_000 },
      again: requeue(),
      fail: new Error("boom"),
      terminal: new TerminalError("never valid"),
    };
    const seen: string[] = [];
    const c = new Controller({
      name: "spy",
      log: silentLogger(),
      queue,
      reconcile: async (key) => {
        seen.push(key);
        const r = results[key];
        if (r instanceof Error) throw r;
        return r;
      },
    });
    await withController(c, async () => {
      for (const key of Object.keys(results)) c.enqueue(key);
      await waitFor(() => seen.length === 7 && queue.stats().inFlight === 0, poll);
      const ops = (key: string): string[] => queue.ops.filter((o) => o.endsWith(` ${key}`) || o.includes(` ${key} `));
      assert.deepEqual(ops("void"), ["forget void"]);
      assert.deepEqual(ops("done"), ["forget done"]);
      assert.deepEqual(ops("after"), ["forget after", "addAfter after 60000"]);
      assert.deepEqual(ops("both"), ["forget both", "addAfter both 60000"]);
      assert.deepEqual(ops("again"), ["addRateLimited again", "addAfter again 60000"]);
      assert.deepEqual(ops("fail"), ["addRateLimited fail", "addAfter fail 60000"]);
      assert.deepEqual(ops("terminal"), ["forget terminal"]);
      assert.equal(queue.stats().delayed, 4);
    });
    assert.equal(queue.stats().delayed, 0, "shutdown drops delayed keys");
  });

  it("retries a failing key with backoff until it succeeds, then forgets it", async () => {
    const queue = new WorkQueue<string>({ rateLimiter: exponentialBackoff(1, 20) });
    let calls = 0;
    const c = new Controller({
      name: "flaky",
      log: silentLogger(),
      queue,
      reconcile: async () => {
        calls++;
        if (calls < 4) throw new Error(`attempt ${calls}`);
        return done();
      },
    });
    await withController(c, async () => {
      c.enqueue("default/a");
      await waitFor(() => calls === 4 && queue.stats().inFlight === 0, poll);
      assert.equal(queue.numRequeues("default/a"), 0);
    });
    assert.equal(calls, 4);
  });

  it("does not retry a TerminalError (also when wrapped as a cause) and logs it", async () => {
    const lines: Record<string, unknown>[] = [];
    const dest = new Writable({
      write(chunk: Buffer, _e, cb): void {
        for (const l of chunk.toString().split("\n")) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
        cb();
      },
    });
    let calls = 0;
    const c = new Controller({
      name: "terminal",
      log: createLogger({ service: "test", level: "error", destination: dest }),
      queue: new WorkQueue<string>({ rateLimiter: exponentialBackoff(1, 1) }),
      reconcile: async () => {
        calls++;
        throw new Error("wrapped", { cause: new TerminalError("bad spec") });
      },
    });
    await withController(c, async () => {
      c.enqueue("ns/x");
      await waitFor(() => calls === 1 && lines.length === 1, poll);
      await new Promise((r) => setTimeout(r, 30));
    });
    assert.equal(calls, 1);
    assert.equal(lines[0]!["key"], "ns/x");
    assert.equal(lines[0]!["controller"], "terminal");
    assert.equal(typeof lines[0]!["err"], "object");
    assert.equal(isTerminalError(new Error("plain")), false);
  });

  it("never reconciles one key concurrently, with several workers", async () => {
    const active = new Set<string>();
    let violations = 0;
    let calls = 0;
    const c = new Controller({
      name: "stress",
      workers: 4,
      log: silentLogger(),
      reconcile: async (key) => {
        if (active.has(key)) violations++;
        active.add(key);
        await new Promise((r) => setTimeout(r, calls++ % 3));
        active.delete(key);
      },
    });
    await withController(c, async () => {
      for (let i = 0; i < 500; i++) c.enqueue(`k${i % 50}`);
      await waitFor(() => c.queue.len() === 0 && c.queue.stats().inFlight === 0, poll);
    });
    assert.equal(violations, 0);
    assert.ok(calls >= 50);
  });

  it("on abort, lets the in-flight reconcile finish (its signal aborted) and stops", async () => {
    let sawAbort = false;
    let finished = false;
    let started = 0;
    const c = new Controller({
      name: "drain",
      workers: 1,
      log: silentLogger(),
      reconcile: async (_key, signal) => {
        started++;
        await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
        sawAbort = signal.aborted;
        await new Promise((r) => setTimeout(r, 20));
        finished = true;
        throw new Error("interrupted"); // not retried while shutting down
      },
    });
    const ac = new AbortController();
    const run = c.start(ac.signal);
    c.enqueue("a");
    c.enqueue("b");
    await waitFor(() => started === 1, poll);
    ac.abort();
    await run;
    assert.equal(sawAbort, true);
    assert.equal(finished, true);
    assert.equal(started, 1, "queued keys are not reconciled after abort");
    assert.equal(c.queue.isShuttingDown(), true);
    await assert.rejects(c.start(new AbortController().signal), /already started/);
  });

  it("exports reconcile totals by result and durations", async () => {
    const registry = new Registry();
    let n = 0;
    const c = new Controller({
      name: "metered",
      log: silentLogger(),
      registry,
      reconcile: async () => {
        n++;
        if (n === 1) throw new Error("first fails");
        return done();
      },
    });
    await withController(c, async () => {
      c.enqueue("a");
      await waitFor(() => n === 2 && c.queue.stats().inFlight === 0, poll);
    });
    const text = await registry.metrics();
    assert.match(text, /controller_runtime_reconcile_total\{controller="metered",result="error"\} 1/);
    assert.match(text, /controller_runtime_reconcile_total\{controller="metered",result="success"\} 1/);
    assert.match(text, /controller_runtime_reconcile_time_seconds_count\{controller="metered"\} 2/);
    assert.match(text, /workqueue_adds_total\{name="metered"\} 2/);
  });
});
