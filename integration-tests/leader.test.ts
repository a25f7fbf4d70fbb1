// test-tier: servers
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { startStack, type Stack } from "@choreo/api/testing";
import { LeaderElector } from "@choreo/kit/leader";

describe("LeaderElector", () => {
  let s: Stack;
  before(async () => {
    s = await startStack();
  });
  after(async () => {
    await s?.stop();
  });

  it("elects exactly one of three candidates, and hands over when the leader stops", async () => {
    const leading = new Set<string>();
    let maxAtOnce = 0;
    const candidates = ["a", "b", "c"].map((id) => {
      const ac = new AbortController();
      const e = new LeaderElector({
        client: s.client,
        namespace: "kube-system",
        name: "test-lock",
        identity: id,
        log: silentLogger(),
        leaseDurationMs: 1_500,
        renewDeadlineMs: 1_000,
        retryPeriodMs: 100,
        onStartedLeading: async (signal) => {
          leading.add(id);
          maxAtOnce = Math.max(maxAtOnce, leading.size);
          await new Promise<void>((r) => signal.addEventListener("abort", () => r(), { once: true }));
          leading.delete(id);
        },
      });
      return { id, ac, e, run: e.start(ac.signal) };
    });
    await waitFor(() => leading.size === 1, { timeoutMs: 10_000, message: "a leader" });
    const first = [...leading][0]!;
    const leader = candidates.find((c) => c.id === first)!;
    leader.ac.abort();
    await leader.run;
    await waitFor(() => leading.size === 1 && !leading.has(first), { timeoutMs: 10_000, message: "a new leader" });
    assert.equal(maxAtOnce, 1, "never two leaders at once");
    for (const c of candidates) c.ac.abort();
    await Promise.all(candidates.map((c) => c.run));
  });
});
