// test-tier: servers
// "Watch from resourceVersion N" is "consume from sequence N+1": every N of
// a run yields exactly the changes after N; a revision older than the log
// keeps yields 410 and an informer relists and converges.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { unwrap, type WatchEvent } from "@choreo/kit";
import { ApiClient } from "@choreo/kit/client";
import { Informer } from "@choreo/kit/informer";
import { silentLogger } from "@choreo/kit/log";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { startCluster, type TestCluster } from "./support/cluster.js";

const pod = (name: string, labels: Record<string, string> = { app: "w" }) =>
  fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "default", labels }, spec: { containers: [{ name: "c", image: "i" }] } });

async function collect(c: TestCluster, from: string, until: number, query = ""): Promise<WatchEvent[] | { status: number; body: string }> {
  const ac = new AbortController();
  // A watch that never reaches `until` fails the test with what it got, instead of hanging it.
  const timer = setTimeout(() => ac.abort(), 20_000);
  const res = await fetch(`${c.httpUrl}/api/v1/namespaces/default/pods?watch=true&resourceVersion=${from}${query}`, {
    headers: { authorization: `Bearer ${c.token}` },
    signal: ac.signal,
  });
  const events: WatchEvent[] = [];
  const reader = res.body!.getReader();
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += Buffer.from(value).toString();
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = JSON.parse(buf.slice(0, nl)) as { type: string; object: { metadata?: { resourceVersion?: string; name?: string }; code?: number } };
        buf = buf.slice(nl + 1);
        if (line.type === "ERROR") return { status: line.object.code ?? 0, body: JSON.stringify(line.object) };
        events.push({
          type: line.type,
          revision: Number(line.object.metadata?.resourceVersion),
          object: undefined,
          status: undefined,
          prevLabels: {},
          prevFields: {},
          hasPrev: false,
          ...{ name: line.object.metadata?.name },
        } as WatchEvent);
        if (Number(line.object.metadata?.resourceVersion) >= until) return events;
      }
    }
  } catch (err) {
    if (!ac.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return events;
}

describe("watch", () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster({ env: { CHOREO_EVENT_RETENTION: "60", CHOREO_WATCH_CACHE_SIZE: "30" } });
  });
  after(async () => {
    await c?.stop();
  });

  it("from every revision N of a run yields exactly the changes after N, in order", async () => {
    const start = Number((await c.client.list("pods")).metadata?.resourceVersion);
    const revisions: number[] = [];
    for (let i = 0; i < 10; i++) {
      const p = unwrap(await c.client.create(pod(`w${i}`)));
      revisions.push(Number(p.metadata?.resourceVersion));
      p.metadata!.labels = { app: "w", step: String(i) };
      revisions.push(Number(unwrap(await c.client.update({ kind: { $case: "pod", value: p } as never })).metadata?.resourceVersion));
    }
    const last = revisions[revisions.length - 1]!;
    // The log holds 60, memory 30: both the watch cache and the log itself answer.
    for (let n = start; n < last; n++) {
      const got = await collect(c, String(n), last);
      assert.ok(Array.isArray(got), `watch from ${n}: ${JSON.stringify(got)}`);
      assert.deepEqual(
        got.map((e) => e.revision),
        revisions.filter((r) => r > n),
        `watch from ${n}`,
      );
    }
  });

  it("answers 410 Expired for a revision older than the log keeps, and an informer relists and converges", async () => {
    let last = 0;
    for (let i = 0; i < 80; i++) last = Number(unwrap(await c.client.create(pod(`old${i}`, { app: "old" }))).metadata?.resourceVersion);
    // The relay publishes to the log after the write: until it has caught up, the log may still hold revision 1
    // and the watch streams (to the last revision, then collect returns the events). Under load that took a while.
    const got = await waitFor(
      async () => {
        const r = await collect(c, "1", last);
        return Array.isArray(r) ? undefined : r;
      },
      { timeoutMs: 30_000, message: "the log no longer holds revision 1: 410" },
    );
    assert.equal(got.status, 410);
    assert.match(got.body, /"reason":"Expired"/);

    const jsm = await jetstreamManager(c.nc);
    const informer = new Informer({
      client: new ApiClient(c.nc, { token: c.token }),
      nc: c.nc,
      jsm,
      kind: "pod",
      labelSelector: "app=old",
      log: silentLogger(),
    });
    const ac = new AbortController();
    const running = informer.start(ac.signal);
    try {
      await informer.waitForSync();
      assert.equal(informer.list().length, 80);
      for (let i = 0; i < 70; i++) await c.client.delete("pods", "default", `old${i}`);
      // As if it had been cut off since revision 1, which the log no longer holds.
      const listsBefore = informer.lists;
      informer.rewind(1);
      await waitFor(() => informer.lists > listsBefore, { timeoutMs: 20_000, message: "informer relists on 410" });
      await waitFor(() => informer.list().length === 10, { timeoutMs: 20_000, message: "informer converges to 10 pods" });
    } finally {
      ac.abort();
      await running;
    }
  });
});
