// NATS failover: the api on a 3-server NATS cluster with the event stream
// replicated (CHOREO_EVENT_REPLICAS=3), one writer creating ConfigMaps one
// after another and one watcher of every event. Each repetition kills -9 the
// stream's leader and measures, from the kill:
//   (a) writes: the first write sent after the kill that the api acknowledged;
//   (b) events: the watcher receiving that write's event.
// The killed server is started again and caught up before the next one.
//   npm run bench:nats-failover -- [--runs 5]
import { parseArgs } from "node:util";
import { jetstreamManager } from "@nats-io/jetstream";
import { ALL_EVENTS, consumeEvents, EVENT_STREAM, streamState } from "@choreo/kit/bus";
import { ApiClient } from "@choreo/kit/client";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { metaOf } from "@choreo/kit";
import { waitFor } from "@choreo/kit/testing";
import { startCluster } from "@choreo/integration-tests/support/cluster";

const { values } = parseArgs({ options: { runs: { type: "string", default: "5" } } });
const runs = Number(values.runs);

const c = await startCluster({ natsCluster: 3, env: { CHOREO_EVENT_REPLICAS: "3", CHOREO_LOG_LEVEL: "error" } });
const ac = new AbortController();
try {
  const jsm = await jetstreamManager(c.nc);
  const client = new ApiClient(c.nc, { timeoutMs: 3_000, token: c.token });

  /** When the watcher received each revision. */
  const seenAt = new Map<number, number>();
  void (async () => {
    let last = (await streamState(jsm)).lastRevision;
    while (!ac.signal.aborted) {
      try {
        for await (const ev of consumeEvents({ nc: c.nc, jsm, filter: ALL_EVENTS, fromRevision: last, signal: ac.signal })) {
          seenAt.set(ev.revision, Date.now());
          last = ev.revision;
        }
      } catch {
        // As an informer: watch again after the last revision seen (JetStream without a stream leader for a moment).
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  })();

  /** Every acknowledged write: when it was sent, acknowledged, its revision. */
  const writes: { sentAt: number; ackAt: number; rev: number }[] = [];
  let n = 0;
  const writer = (async () => {
    while (!ac.signal.aborted) {
      const sentAt = Date.now();
      try {
        const o = await client.create(
          fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: `failover-${n++}`, namespace: "default" }, data: { at: String(sentAt) } }),
        );
        writes.push({ sentAt, ackAt: Date.now(), rev: Number(metaOf(o).resourceVersion) });
      } catch {
        // Not acknowledged in 3 s (or refused while the api's relay waits): the next one.
      }
    }
  })();

  const rows: { leader: string; writesMs: number; eventsMs: number }[] = [];
  for (let run = 1; run <= runs; run++) {
    // Steady: every member a current replica, writes acknowledged and seen.
    await waitFor(
      async () => {
        const info = await jsm.streams.info(EVENT_STREAM);
        const ok = info.cluster?.leader && info.cluster.replicas?.length === 2 && info.cluster.replicas.every((r) => r.current && !r.lag);
        const w = writes.at(-1);
        return ok && w && Date.now() - w.ackAt < 500 && seenAt.has(w.rev);
      },
      { timeoutMs: 120_000, message: "a steady cluster (3 current replicas, writes acknowledged and seen)" },
    );
    await new Promise((r) => setTimeout(r, 2_000));
    const leader = (await jsm.streams.info(EVENT_STREAM)).cluster!.leader!;
    const member = c.natsCluster!.member(leader);
    await member.kill();
    const killedAt = Date.now();
    const first = await waitFor(() => writes.find((w) => w.sentAt > killedAt), { timeoutMs: 120_000, message: "a write acknowledged after the kill" });
    const seen = await waitFor(() => seenAt.get(first.rev), { timeoutMs: 120_000, message: `the watcher to see revision ${first.rev}` });
    rows.push({ leader, writesMs: first.ackAt - killedAt, eventsMs: seen - killedAt });
    console.log(`run ${run}: killed ${leader}; writes acknowledged again after ${first.ackAt - killedAt} ms, the watcher saw them after ${seen - killedAt} ms`);
    await member.restart();
  }
  const fmt = (xs: number[]): string => {
    const s = [...xs].sort((a, b) => a - b);
    return `min ${s[0]} / median ${s[Math.floor(s.length / 2)]} / max ${s.at(-1)} ms`;
  };
  console.log(`\nstream leader killed -9, ${runs} runs, ${writes.length} writes acknowledged in all`);
  console.log(`(a) kill → writes acknowledged again: ${fmt(rows.map((r) => r.writesMs))}`);
  console.log(`(b) kill → the watcher sees them:     ${fmt(rows.map((r) => r.eventsMs))}`);
  ac.abort();
  await writer;
} finally {
  ac.abort();
  await c.stop();
}
