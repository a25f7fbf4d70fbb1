import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { waitFor } from "../testing/index.js";
import { TimerHeap } from "./index.js";

describe("TimerHeap", () => {
  it("fires due keys in time order with a fake clock", () => {
    let now = 0;
    const fired: string[] = [];
    const h = new TimerHeap<string>(
      (k) => fired.push(k),
      () => now,
    );
    try {
      const times = [50, 10, 40, 20, 30, 60, 5];
      times.forEach((t, i) => h.schedule(`k${i}`, t));
      assert.equal(h.size, 7);
      assert.deepEqual(h.peek(), { key: "k6", at: 5 });
      now = 35;
      h.fire();
      assert.deepEqual(fired, ["k6", "k1", "k3", "k4"]);
      h.schedule("k0", 45); // earlier than 50: moves up
      h.schedule("k2", 100); // later than 40: ignored
      assert.equal(h.dueAt("k0"), 45);
      assert.equal(h.dueAt("k2"), 40);
      assert.equal(h.delete("k5"), true);
      assert.equal(h.delete("k5"), false);
      now = 1000;
      h.fire();
      assert.deepEqual(fired, ["k6", "k1", "k3", "k4", "k2", "k0"]);
      assert.equal(h.size, 0);
    } finally {
      h.clear();
    }
  });

  it("keeps the heap order through random schedules and deletes", () => {
    let now = 0;
    const fired: number[] = [];
    const h = new TimerHeap<number>(
      (k) => fired.push(k),
      () => now,
    );
    let seed = 7;
    const rand = (): number => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const due = new Map<number, number>();
    for (let i = 0; i < 3000; i++) {
      const k = Math.floor(rand() * 1000);
      const at = Math.floor(rand() * 1e6);
      h.schedule(k, at);
      due.set(k, Math.min(due.get(k) ?? Infinity, at));
      if (rand() < 0.1) {
        h.delete(k);
        due.delete(k);
      }
    }
    assert.equal(h.size, due.size);
    now = 2e6;
    h.fire();
    h.clear();
    const expected = [...due.entries()].sort((a, b) => a[1] - b[1]).map((e) => due.get(e[0])!);
    assert.deepEqual(
      fired.map((k) => due.get(k)!),
      expected,
    );
    assert.equal(new Set(fired).size, fired.length);
  });

  it("uses a real timer for the earliest key", async () => {
    const fired: string[] = [];
    const h = new TimerHeap<string>((k) => fired.push(k));
    h.scheduleIn("late", 60_000);
    h.scheduleIn("soon", 10);
    await waitFor(() => fired.length === 1, { timeoutMs: 10_000, intervalMs: 5 });
    assert.deepEqual(fired, ["soon"]);
    assert.equal(h.size, 1);
    h.clear();
    assert.equal(h.size, 0);
  });
});
