import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { waitFor } from "../testing/index.js";
import { exponentialBackoff, WorkQueue } from "./index.js";

const poll = { timeoutMs: 10_000, intervalMs: 5 };
const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe("WorkQueue", () => {
  it("is FIFO and collapses repeated adds of a queued key", async () => {
    const q = new WorkQueue();
    for (const k of ["a", "b", "a", "c", "b", "a"]) q.add(k);
    assert.equal(q.len(), 3);
    const got: (string | undefined)[] = [];
    for (let i = 0; i < 3; i++) {
      const k = await q.get();
      got.push(k);
      q.done(k!);
    }
    assert.deepEqual(got, ["a", "b", "c"]);
    assert.equal(q.len(), 0);
    assert.equal(q.stats().adds, 6);
    q.shutDown();
  });

  it("re-queues a key added while in flight exactly once, after done", async () => {
    const q = new WorkQueue();
    q.add("a");
    const k = await q.get();
    assert.equal(k, "a");
    q.add("a");
    q.add("a");
    q.add("b");
    assert.equal(q.len(), 1, "only b is handed out while a is in flight");
    assert.equal(await q.get(), "b");
    q.done("b");
    assert.equal(q.len(), 0);
    q.done("a");
    assert.equal(q.len(), 1);
    assert.equal(await q.get(), "a");
    q.done("a");
    assert.equal(q.len(), 0);
    assert.equal(q.stats().inFlight, 0);
    q.shutDown();
  });

  it("hands a key straight to a waiting getter and never to two getters", async () => {
    const q = new WorkQueue();
    const g1 = q.get();
    const g2 = q.get();
    q.add("a");
    assert.equal(await g1, "a");
    q.add("a"); // in flight: must not reach g2
    await tick(10);
    assert.equal(q.stats().waiters, 1);
    q.done("a");
    assert.equal(await g2, "a");
    q.done("a");
    q.shutDown();
  });

  it("never processes a key concurrently with several workers (random stress)", async () => {
    const q = new WorkQueue();
    const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
    const active = new Set<string>();
    const processed = new Map<string, number>();
    const lastAdd = new Map<string, number>();
    const lastStart = new Map<string, number>();
    let seq = 0;
    let violations = 0;
    let rnd = 42;
    const random = (): number => {
      rnd = (rnd * 1103515245 + 12345) % 2 ** 31;
      return rnd / 2 ** 31;
    };
    const worker = async (): Promise<void> => {
      for (;;) {
        const k = await q.get();
        if (k === undefined) return;
        if (active.has(k)) violations++;
        active.add(k);
        lastStart.set(k, ++seq);
        if (random() < 0.3) await tick(random() < 0.5 ? 0 : 1);
        else await Promise.resolve();
        active.delete(k);
        processed.set(k, (processed.get(k) ?? 0) + 1);
        q.done(k);
      }
    };
    const workers = Array.from({ length: 8 }, () => worker());
    for (let round = 0; round < 10; round++) {
      for (let i = 0; i < 200; i++) {
        const k = keys[Math.floor(random() * keys.length)]!;
        lastAdd.set(k, ++seq);
        q.add(k);
      }
      await tick(random() < 0.5 ? 0 : 2);
    }
    await waitFor(() => q.len() === 0 && q.stats().inFlight === 0, poll);
    await q.shutDownWithDrain();
    await Promise.all(workers);
    assert.equal(violations, 0);
    // Every add is followed by a processing that started after it.
    for (const [k, added] of lastAdd) assert.ok((lastStart.get(k) ?? 0) > added, `${k} processed after its last add`);
  });

  it("shutDown wakes idle getters, hands out what is queued, then undefined; adds are ignored", async () => {
    const q = new WorkQueue();
    const idle = [q.get(), q.get()];
    q.shutDown();
    assert.deepEqual(await Promise.all(idle), [undefined, undefined]);
    assert.equal(q.isShuttingDown(), true);
    q.add("late");
    assert.equal(q.len(), 0);
    assert.equal(await q.get(), undefined);

    const q2 = new WorkQueue();
    q2.add("a");
    q2.add("b");
    q2.shutDown();
    assert.equal(await q2.get(), "a");
    assert.equal(await q2.get(), "b");
    assert.equal(await q2.get(), undefined);
  });

  it("shutDownWithDrain waits for in-flight keys to be done", async () => {
    const q = new WorkQueue();
    q.add("a");
    const k = await q.get();
    let drained = false;
    const drain = q.shutDownWithDrain().then(() => (drained = true));
    await tick(20);
    assert.equal(drained, false);
    q.done(k!);
    await drain;
    assert.equal(drained, true);
    await q.shutDownWithDrain(); // again: already drained
  });

  it("get resolves undefined when its signal aborts, and the key goes to the next getter", async () => {
    const q = new WorkQueue();
    const ac = new AbortController();
    const g = q.get(ac.signal);
    ac.abort();
    assert.equal(await g, undefined);
    assert.equal(await q.get(AbortSignal.abort()), undefined);
    q.add("a");
    assert.equal(q.len(), 1, "an aborted getter takes nothing");
    assert.equal(await q.get(), "a");
    q.shutDown();
  });

  it("addAfter delivers after the delay; the earliest schedule wins; <= 0 adds now", async () => {
    const q = new WorkQueue();
    q.addAfter("a", 10_000);
    q.addAfter("a", 20);
    q.addAfter("a", 30_000);
    assert.equal(q.stats().delayed, 1);
    assert.equal(q.len(), 0);
    const t0 = performance.now();
    assert.equal(await q.get(), "a");
    assert.ok(performance.now() - t0 >= 15, "not before its time");
    assert.equal(q.stats().delayed, 0);
    q.done("a");
    q.addAfter("now", 0);
    q.addAfter("now", -5);
    assert.equal(q.len(), 1);
    q.shutDown();
    assert.equal(q.stats().delayed, 0);
  });

  it("delivers thousands of delayed keys, each exactly once", async () => {
    const q = new WorkQueue();
    const n = 5000;
    for (let i = 0; i < n; i++) q.addAfter(`k${i}`, 1 + (i % 40));
    for (let i = 0; i < n; i += 2) q.addAfter(`k${i}`, 45); // later: ignored
    assert.equal(q.stats().delayed, n);
    const seen = new Map<string, number>();
    while (seen.size < n) {
      const k = (await q.get())!;
      seen.set(k, (seen.get(k) ?? 0) + 1);
      q.done(k);
    }
    await tick(60);
    assert.equal(q.len(), 0);
    assert.equal(q.stats().delayed, 0);
    assert.ok([...seen.values()].every((c) => c === 1));
    q.shutDown();
  });

  it("addRateLimited backs off per key; forget resets", async () => {
    const q = new WorkQueue({ rateLimiter: exponentialBackoff(1, 50) });
    q.addRateLimited("a");
    assert.equal(q.numRequeues("a"), 1);
    assert.equal(await q.get(), "a");
    q.done("a");
    q.addRateLimited("a");
    q.addRateLimited("a");
    assert.equal(q.numRequeues("a"), 3);
    assert.equal(await q.get(), "a");
    q.done("a");
    q.forget("a");
    assert.equal(q.numRequeues("a"), 0);
    assert.equal(q.stats().retries, 3);
    q.shutDown();
  });

  it("exports depth, adds, latency, work duration and retries, labelled by name", async () => {
    const registry = new Registry();
    const q = new WorkQueue({ metrics: { registry, name: "pods" }, rateLimiter: exponentialBackoff(1, 10) });
    const q2 = new WorkQueue({ metrics: { registry, name: "nodes" } }); // shares the metrics
    q.add("a");
    q.add("b");
    q2.add("x");
    const k = (await q.get())!;
    q.done(k);
    q.addRateLimited("c");
    const text = await registry.metrics();
    assert.match(text, /workqueue_depth\{name="pods"\} 1/);
    assert.match(text, /workqueue_depth\{name="nodes"\} 1/);
    assert.match(text, /workqueue_adds_total\{name="pods"\} 2/);
    assert.match(text, /workqueue_retries_total\{name="pods"\} 1/);
    assert.match(text, /workqueue_queue_duration_seconds_count\{name="pods"\} 1/);
    assert.match(text, /workqueue_work_duration_seconds_count\{name="pods"\} 1/);
    q.shutDown();
    q2.shutDown();
  });
});
