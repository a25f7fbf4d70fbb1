// test-tier: servers
// The hollow nodes of a process with the store away: a few whole lines and a summary a window, not a line with a stack
// per node per round (at 5,000 nodes a Redis stall wrote ~10,000 lines a round). Before the failure log this test wrote
// ~180 whole lines (one per node per failed renewal) and failed its first assertion.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import type { Lease } from "@choreo/kit/gen/choreo/coordination/v1/coordination";
import { createLogger, FailureLog } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { startStack, type Stack } from "@choreo/api/testing";
import { hollowNodes, runAgents } from "./hollow-nodes.js";

const NODES = 60;

describe("hollow nodes' logs while the store is away", () => {
  let s: Stack;
  const lines: Record<string, unknown>[] = [];
  const ac = new AbortController();
  let done: Promise<void> | undefined;

  before(async () => {
    s = await startStack();
  });
  after(async () => {
    ac.abort();
    await done?.catch(() => undefined);
    await s?.stop();
  });

  it(`${NODES} nodes renewing every 200 ms through a 4 s Redis stall: ≤ 5 whole lines per kind of failure and a summary, then recovered`, async () => {
    const stream = new Writable({
      write(chunk: Buffer, _enc, cb): void {
        for (const l of chunk.toString("utf8").split("\n")) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
        cb();
      },
    });
    const log = createLogger({ service: "node-agent", level: "info", destination: stream });
    // A 6 s window (30 s by default) to keep the test short.
    const failures = new FailureLog(log, { windowMs: 6_000 });
    const agents = hollowNodes({
      count: NODES,
      client: s.client,
      nc: s.nc,
      jsm: s.jsm,
      log,
      failures,
      prefix: "quiet-",
      agent: { leaseRenewMs: 200, statusCheckMs: 500 },
    });
    done = runAgents(agents, log).start(ac.signal);
    const leaseOf = async (n: number): Promise<Lease | undefined> => {
      const got = await s.client.get("leases", "kube-node-lease", `quiet-${n}`).catch(() => undefined);
      return got && (unwrap(got) as Lease);
    };
    await waitFor(async () => (await leaseOf(NODES - 1)) !== undefined, { timeoutMs: 20_000 });
    const before = lines.length;

    // The store stops answering: every renewal and status round of every node times out (the lease client's 1 s).
    const pid = s.redis.process().pid;
    process.kill(pid, "SIGSTOP");
    await new Promise((r) => setTimeout(r, 4_000));
    process.kill(pid, "SIGCONT");
    const stalled = lines.slice(before);

    // Each node failed its renewal ~3 times: ~180 failures, of which at most 5 are written whole with their stack.
    const whole = stalled.filter((l) => l["msg"] === "periodic task failed");
    assert.ok(whole.length >= 1 && whole.length <= 5, `whole lines: ${whole.length}`);
    for (const l of whole) assert.ok(typeof (l["err"] as { stack?: unknown }).stack === "string");

    // Back: the window's summary counts what was not written, and the renewals recover (a few lines, then counted).
    await waitFor(() => lines.some((l) => l["msg"] === "failures summarised" && l["of"] === "periodic task failed"), { timeoutMs: 40_000 });
    const summary = lines.find((l) => l["msg"] === "failures summarised" && l["of"] === "periodic task failed")!;
    assert.ok((summary["failures"] as number) >= NODES, `summarised failures: ${String(summary["failures"])}`);
    assert.ok((summary["subjects"] as number) >= NODES / 2, `subjects: ${String(summary["subjects"])}`);
    await waitFor(async () => {
      const l = await leaseOf(0);
      return Date.now() - Date.parse(l?.spec?.renewTime ?? "") < 1_000;
    });
    const all = lines.slice(before);
    assert.ok(all.length < NODES, `${all.length} lines for ${NODES} nodes' ~${NODES * 3} failed renewals`);
    assert.ok(all.some((l) => l["msg"] === "recovered" && l["of"] === "periodic task failed"));
  });
});
