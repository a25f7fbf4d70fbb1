import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { waitFor } from "../process/index.js";
import { backoff, DisposableGroup, runAll, shutdownWithTimeout, signalController, sleep, stopTimeoutMs, type Runnable } from "./index.js";

/** A runnable that runs until aborted, recording when it stopped. */
function idle(name: string, log: string[]): Runnable {
  return {
    name,
    start: (signal) =>
      new Promise<void>((resolve) => {
        const stop = (): void => {
          log.push(`${name} stopped`);
          resolve();
        };
        if (signal.aborted) stop();
        else signal.addEventListener("abort", stop, { once: true });
      }),
  };
}

describe("runAll", () => {
  it("runs until the signal aborts", async () => {
    const log: string[] = [];
    const ac = new AbortController();
    const run = runAll([idle("a", log), idle("b", log)], ac.signal);
    await sleep(10);
    assert.deepEqual(log, []);
    ac.abort();
    await run;
    assert.deepEqual(log.sort(), ["a stopped", "b stopped"]);
  });

  it("aborts the others when one fails and rethrows the first error after all settled", async () => {
    const log: string[] = [];
    const slowStop: Runnable = {
      name: "slow",
      start: async (signal) => {
        await new Promise<void>((r) => signal.addEventListener("abort", () => r(), { once: true }));
        await sleep(20);
        log.push("slow stopped");
      },
    };
    const failing: Runnable = {
      name: "bad",
      start: async () => {
        await sleep(5);
        throw new Error("boom");
      },
    };
    const failingLater: Runnable = {
      name: "worse",
      start: async (signal) => {
        await new Promise<void>((r) => signal.addEventListener("abort", () => r(), { once: true }));
        throw new Error("second");
      },
    };
    const outer = new AbortController();
    await assert.rejects(runAll([idle("a", log), slowStop, failing, failingLater], outer.signal), /boom/);
    assert.deepEqual(log.sort(), ["a stopped", "slow stopped"]);
    assert.equal(outer.signal.aborted, false, "the caller's signal is left alone");
  });

  it("treats a synchronous throw as a failure, wraps non-errors, and starts aborted", async () => {
    const sync: Runnable = {
      name: "sync",
      start: () => {
        throw new Error("sync");
      },
    };
    await assert.rejects(runAll([sync, idle("a", [])], new AbortController().signal), /sync/);
    // Not an Error: wrapped with the runnable's name.
    const odd: Runnable = { name: "odd", start: () => Promise.reject("nope" as unknown as Error) };
    await assert.rejects(runAll([odd], new AbortController().signal), /odd failed: nope/);
    await runAll([idle("a", [])], AbortSignal.abort());
  });
});

describe("signalController", () => {
  it("aborts on the first signal and exits with 130 on the second", () => {
    const codes: number[] = [];
    let second = 0;
    const ac = signalController({ signals: ["SIGUSR2"], exit: (c) => codes.push(c), onSecond: () => second++ });
    try {
      process.emit("SIGUSR2", "SIGUSR2");
      assert.equal(ac.signal.aborted, true);
      assert.deepEqual(codes, []);
      process.emit("SIGUSR2", "SIGUSR2");
      assert.equal(second, 1);
      assert.deepEqual(codes, [130]);
    } finally {
      process.removeAllListeners("SIGUSR2");
    }
  });
});

/**
 * A process controller on SIGUSR2 with a 50 ms stop timeout, recording each exit with its time and each timeout
 * call: the tests check that the exit came no sooner than the timeout after the abort, which a loaded machine
 * cannot make false (a timer never fires early), rather than that it had not come yet at some later moment.
 */
function timedController(): { ac: AbortController; exits: { code: number; at: number }[]; told: string[] } {
  const exits: { code: number; at: number }[] = [];
  const told: string[] = [];
  const ac = signalController({
    signals: ["SIGUSR2"],
    exit: (code) => exits.push({ code, at: Date.now() }),
    stopTimeoutMs: 50,
    onTimeout: () => told.push("timeout"),
  });
  return { ac, exits, told };
}

describe("a bounded stop", () => {
  it("stopTimeoutMs: exits with 1 that long after the first signal when the process is still there, after onTimeout", async () => {
    const { ac, exits, told } = timedController();
    try {
      await sleep(80);
      assert.equal(exits.length, 0, "no timer before the signal");
      const signalled = Date.now();
      process.emit("SIGUSR2", "SIGUSR2");
      assert.equal(ac.signal.aborted, true);
      await waitFor(() => exits.length > 0, { timeoutMs: 10_000 });
      assert.deepEqual(told, ["timeout"]);
      assert.deepEqual(
        exits.map((e) => e.code),
        [1],
      );
      assert.ok(exits[0]!.at - signalled >= 45, `exited ${exits[0]!.at - signalled} ms after the signal`);
    } finally {
      process.removeAllListeners("SIGUSR2");
    }
  });

  it("a runnable's failure is logged at once and, through onFailure, starts the stop timeout of the process's controller: a runnable that never returns cannot keep the process up", async () => {
    const { ac, exits, told } = timedController();
    let aborted = 0;
    ac.signal.addEventListener("abort", () => (aborted = Date.now()), { once: true });
    const errors: { runnable?: string; msg: string }[] = [];
    const log = { warn: () => undefined, error: (f: object, msg: string) => errors.push({ runnable: (f as { runnable?: string }).runnable, msg }) };
    const stuck: Runnable = { name: "stuck", start: () => new Promise<void>(() => undefined) };
    const failing: Runnable = {
      name: "failing",
      start: async () => {
        await sleep(10);
        throw new Error("boom");
      },
    };
    try {
      void runAll([stuck, failing], ac.signal, { log, onFailure: (err) => ac.abort(err) });
      // Told while "stuck" still runs: not when all settled, which is never.
      await waitFor(() => errors.length > 0, { timeoutMs: 10_000 });
      assert.deepEqual(errors, [{ runnable: "failing", msg: "runnable failed; stopping the others" }]);
      assert.equal(ac.signal.aborted, true);
      await waitFor(() => exits.length > 0, { timeoutMs: 10_000 });
      assert.deepEqual(told, ["timeout"]);
      assert.deepEqual(
        exits.map((e) => e.code),
        [1],
      );
      assert.ok(exits[0]!.at - aborted >= 45, `exited ${exits[0]!.at - aborted} ms after the abort`);
    } finally {
      process.removeAllListeners("SIGUSR2");
    }
  });

  it("stopTimeoutMs reads CHOREO_STOP_TIMEOUT_MS (0: none) and refuses a non-number", () => {
    assert.equal(stopTimeoutMs(15_000, {}), 15_000);
    assert.equal(stopTimeoutMs(15_000, { CHOREO_STOP_TIMEOUT_MS: "2500" }), 2_500);
    assert.equal(stopTimeoutMs(15_000, { CHOREO_STOP_TIMEOUT_MS: "0" }), undefined);
    assert.throws(() => stopTimeoutMs(15_000, { CHOREO_STOP_TIMEOUT_MS: "soon" }), /CHOREO_STOP_TIMEOUT_MS: "soon" is not a number/);
  });

  it("runAll with a log names the runnables still stopping, and stops telling once all returned", async () => {
    const warned: string[][] = [];
    const log = { warn: (f: object) => warned.push((f as { runnables: string[] }).runnables) };
    let release = (): void => undefined;
    const slow: Runnable = {
      name: "slow",
      start: (signal) =>
        new Promise<void>((resolve) => {
          signal.addEventListener("abort", () => (release = resolve), { once: true });
        }),
    };
    const ac = new AbortController();
    const done = runAll([idle("quick", []), slow], ac.signal, { log, stoppingWarnMs: 30 });
    await sleep(50);
    assert.equal(warned.length, 0, "nothing told before the abort");
    ac.abort();
    await sleep(100);
    assert.ok(warned.length >= 2, `told ${warned.length} times`);
    assert.ok(
      warned.every((w) => w.length === 1 && w[0] === "slow"),
      JSON.stringify(warned),
    );
    release();
    await done;
    const after = warned.length;
    await sleep(80);
    assert.equal(warned.length, after, "no more once every runnable returned");
  });
});

describe("sleep, backoff, shutdownWithTimeout", () => {
  it("sleep resolves true after the delay and false on abort", async () => {
    assert.equal(await sleep(5), true);
    const ac = new AbortController();
    const s = sleep(60_000, ac.signal);
    ac.abort();
    assert.equal(await s, false);
    assert.equal(await sleep(10, AbortSignal.abort()), false);
  });

  it("backoff grows by the factor up to the cap, with bounded jitter, and resets", () => {
    const b = backoff({ initialMs: 100, maxMs: 1000, jitter: 0 });
    assert.deepEqual([b.next(), b.next(), b.next(), b.next(), b.next()], [100, 200, 400, 800, 1000]);
    b.reset();
    assert.equal(b.next(), 100);
    const j = backoff({ initialMs: 100, maxMs: 1000, factor: 3, random: () => 0.5 });
    assert.deepEqual([j.next(), j.next(), j.next()].map(Math.round), [110, 330, 990]);
    assert.equal(j.next(), 1000, "jitter never exceeds the cap");
    const r = backoff({ initialMs: 100, maxMs: 10_000 });
    for (let i = 0; i < 100; i++) {
      const d = r.next();
      assert.ok(d >= 100 && d <= 10_000);
    }
  });

  it("shutdownWithTimeout passes the value through or rejects on time", async () => {
    assert.equal(await shutdownWithTimeout(Promise.resolve(7), 1000), 7);
    await assert.rejects(shutdownWithTimeout(new Promise(() => {}), 10), /timed out after 10 ms/);
  });
});

describe("DisposableGroup", () => {
  it("disposes in reverse order, once", async () => {
    const order: string[] = [];
    const resource = (name: string): AsyncDisposable => ({ [Symbol.asyncDispose]: async () => void order.push(name) });
    const g = new DisposableGroup();
    const r = g.use(resource("first"));
    g.defer(() => void order.push("second"));
    g.use(resource("third"));
    assert.equal(typeof r[Symbol.asyncDispose], "function");
    await g[Symbol.asyncDispose]();
    await g[Symbol.asyncDispose]();
    assert.deepEqual(order, ["third", "second", "first"]);
    assert.equal(g.isDisposed, true);
  });

  it("works with await using", async () => {
    const order: string[] = [];
    {
      await using g = new DisposableGroup();
      g.defer(() => void order.push("cleanup"));
      order.push("body");
    }
    assert.deepEqual(order, ["body", "cleanup"]);
  });

  it("runs every cleanup; one error is rethrown, several become an AggregateError", async () => {
    const ran: number[] = [];
    const one = new DisposableGroup();
    one.defer(() => void ran.push(1));
    one.defer(() => {
      throw new Error("only");
    });
    await assert.rejects(one[Symbol.asyncDispose](), /only/);
    assert.deepEqual(ran, [1]);

    const many = new DisposableGroup();
    many.defer(() => {
      throw new Error("a");
    });
    many.defer(async () => {
      throw new Error("b");
    });
    await assert.rejects(many[Symbol.asyncDispose](), (err: unknown) => {
      assert.ok(err instanceof AggregateError);
      assert.deepEqual(
        err.errors.map((e: Error) => e.message),
        ["b", "a"],
      );
      return true;
    });
  });
});
