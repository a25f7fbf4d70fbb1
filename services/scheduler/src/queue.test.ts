import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SchedulingQueue } from "./queue.js";

const q = (key: string, priority = 0, created = "2025-01-01T00:00:00Z") => ({ key, priority, created });

describe("scheduling queue", () => {
  it("pops by priority, then creation; dedupes", async () => {
    const s = new SchedulingQueue();
    s.add(q("low", 0, "2025-01-01T00:00:01Z"));
    s.add(q("old", 0, "2025-01-01T00:00:00Z"));
    s.add(q("high", 100, "2025-01-01T00:00:05Z"));
    s.add(q("low", 0, "2025-01-01T00:00:01Z"));
    assert.deepEqual([(await s.pop())!.key, (await s.pop())!.key, (await s.pop())!.key], ["high", "old", "low"]);
    assert.deepEqual(s.pending(), { active: 0, backoff: 0, unschedulable: 0, inflight: 3 });
    s.close();
  });

  it("an unschedulable pod waits for a cluster change, then backs off and returns", async () => {
    const s = new SchedulingQueue({ initialBackoffMs: 10 });
    s.add(q("p"));
    await s.pop();
    s.unschedulable("p");
    assert.equal(s.pending().unschedulable, 1);
    s.moveAll();
    assert.equal(s.pending().backoff, 1);
    assert.equal((await s.pop())!.key, "p");
    s.done("p");
    assert.equal(s.pending().inflight, 0);
    s.close();
  });

  it("a change during the attempt is not lost: the pod backs off instead of waiting", async () => {
    const s = new SchedulingQueue({ initialBackoffMs: 10 });
    s.add(q("p"));
    await s.pop();
    s.moveAll();
    s.unschedulable("p");
    assert.equal(s.pending().backoff, 1);
    assert.equal((await s.pop())!.key, "p");
    s.close();
  });

  it("close wakes waiting workers", async () => {
    const s = new SchedulingQueue();
    const w = s.pop();
    s.close();
    assert.equal(await w, undefined);
  });
});
