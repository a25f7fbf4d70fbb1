import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { rate, SampleWindow } from "./window.js";

const S = 1_000_000_000n;

describe("CPU rate over a window of readings", () => {
  it("one core busy for 10 s is 1e9 nanocores; half a core is 5e8", () => {
    assert.equal(rate({ atMs: 0, cpuNs: 0n, memoryBytes: 1n }, { atMs: 10_000, cpuNs: 10n * S, memoryBytes: 2n })?.cpuNanocores, S);
    const half = rate({ atMs: 1_000, cpuNs: 3n * S, memoryBytes: 0n }, { atMs: 5_000, cpuNs: 5n * S, memoryBytes: 7n });
    assert.deepEqual(half, { cpuNanocores: S / 2n, memoryBytes: 7n, endMs: 5_000, windowMs: 4_000 });
  });

  it("no rate when no time passed or the counter went backwards", () => {
    assert.equal(rate({ atMs: 5, cpuNs: 1n, memoryBytes: 0n }, { atMs: 5, cpuNs: 2n, memoryBytes: 0n }), undefined);
    assert.equal(rate({ atMs: 0, cpuNs: 9n, memoryBytes: 0n }, { atMs: 5, cpuNs: 2n, memoryBytes: 0n }), undefined);
  });

  it("needs two readings; keeps about its span of history; the newest memory", () => {
    const w = new SampleWindow(15_000);
    assert.equal(w.usage(), undefined);
    w.add({ atMs: 0, cpuNs: 0n, memoryBytes: 10n });
    assert.equal(w.usage(), undefined);
    for (let t = 5_000; t <= 60_000; t += 5_000) w.add({ atMs: t, cpuNs: (BigInt(t) * S) / 4_000n, memoryBytes: BigInt(t) });
    const u = w.usage();
    assert.ok(u);
    assert.equal(u.windowMs, 15_000);
    assert.equal(u.cpuNanocores, S / 4n);
    assert.equal(u.memoryBytes, 60_000n);
    assert.equal(u.endMs, 60_000);
    assert.ok(w.length <= 4);
  });

  it("a counter that goes backwards (a restart) starts the window afresh", () => {
    const w = new SampleWindow(15_000);
    w.add({ atMs: 0, cpuNs: 10n * S, memoryBytes: 0n });
    w.add({ atMs: 5_000, cpuNs: 15n * S, memoryBytes: 0n });
    w.add({ atMs: 10_000, cpuNs: 1n * S, memoryBytes: 0n });
    assert.equal(w.length, 1);
    assert.equal(w.usage(), undefined);
    w.add({ atMs: 12_000, cpuNs: 2n * S, memoryBytes: 0n });
    assert.equal(w.usage()?.cpuNanocores, S / 2n);
  });
});
