// test-tier: servers
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { connectBus } from "@choreo/kit/bus";
import { ApiClient } from "@choreo/kit/client";
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

  it("stops without waiting out a renewal nobody answers (nats-server stopped): the release is tried briefly and left to expire", async () => {
    // Requests that would wait a minute: before, the renewal in flight and the release (a get and an update) were
    // each waited out, so a stop during a bus outage took minutes; now it takes the release's bound.
    const conn = await connectBus(s.nats.url, "leader-outage");
    const client = new ApiClient(conn, { timeoutMs: 60_000 });
    const ac = new AbortController();
    let led = false;
    const e = new LeaderElector({
      client,
      namespace: "kube-system",
      name: "outage-lock",
      identity: "solo",
      log: silentLogger(),
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 200,
      onStartedLeading: async (signal) => {
        led = true;
        await new Promise<void>((r) => signal.addEventListener("abort", () => r(), { once: true }));
      },
    });
    const run = e.start(ac.signal);
    await waitFor(() => led, { timeoutMs: 10_000, message: "leading" });
    const server = s.nats.process().pid;
    process.kill(server, "SIGSTOP");
    try {
      // A renewal is sent (every 200 ms) and hangs.
      await new Promise((r) => setTimeout(r, 1_000));
      const started = Date.now();
      ac.abort();
      const stopped = await Promise.race([run.then(() => "stopped"), new Promise<string>((r) => setTimeout(() => r("still running"), 30_000).unref())]);
      assert.equal(stopped, "stopped", "the elector stopped before its requests' 60 s timeout");
      assert.ok(Date.now() - started < 30_000);
    } finally {
      process.kill(server, "SIGCONT");
      await conn.close();
    }
  });
});
