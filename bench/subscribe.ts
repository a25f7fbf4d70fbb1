// Subscriber throughput (issue 17): events/s one @choreo/client subscribe()
// consumer decodes from CHOREO_EVENTS, beside raw JetStream reading the same
// messages (an ordered consumer, no decode), on a real nats-server. N pod
// events are stored first the relay's way (sequence == revision); each
// reader then reads all N from revision 0.
//   npm run bench:subscribe [-- --events 100000 --rounds 3]
import { parseArgs } from "node:util";
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { ALL_EVENTS, EVENT_STREAM, connectBus, ensureEventStream } from "@choreo/kit/bus";
import { subscriberNatsPermissions } from "@choreo/kit/secrets";
import { startNats } from "@choreo/kit/testing";
import { subscribe } from "@choreo/client";
import { publishPodChanges, type PodChange } from "@choreo/client/testing";
import { cpuMs } from "./proc-cpu.js";

const { values } = parseArgs({ options: { events: { type: "string", default: "100000" }, rounds: { type: "string", default: "3" } } });
const N = Number(values.events);
const ROUNDS = Number(values.rounds);

/** Reads N messages with an ordered consumer, no decode. */
async function raw(nc: NatsConnection): Promise<void> {
  const consumer = await jetstream(nc).consumers.get(EVENT_STREAM, { filter_subjects: ALL_EVENTS, deliver_policy: DeliverPolicy.All });
  const messages = await consumer.consume({ max_messages: 1_024 });
  let n = 0;
  for await (const m of messages) {
    if (m.seq >= N) break;
    n++;
  }
  await messages.close();
  if (n !== N - 1) throw new Error(`raw read ${n + 1}, expected ${N}`);
}

/** Reads N typed events with subscribe() (durable: acked each; or ephemeral). */
async function typed(nc: NatsConnection, durable: string | undefined): Promise<void> {
  let n = 0;
  let names = 0;
  for await (const ev of subscribe(nc, { fromRevision: 0, ...(durable ? { durable } : {}) })) {
    n++;
    names += ev.object.metadata?.name ? 1 : 0; // touch the decoded object
    if (ev.revision >= N) break;
  }
  if (n !== N || names !== N) throw new Error(`subscribe read ${n}, expected ${N}`);
  if (durable) await (await jetstreamManager(nc)).consumers.delete(EVENT_STREAM, durable);
}

async function measure(name: string, fn: () => Promise<void>): Promise<{ name: string; perSec: number; cpuUsPerEvent: number }> {
  const cpu0 = cpuMs(process.pid);
  const t0 = performance.now();
  await fn();
  const ms = performance.now() - t0;
  return { name, perSec: Math.round((N / ms) * 1_000), cpuUsPerEvent: Math.round(((cpuMs(process.pid) - cpu0) * 1_000) / N) };
}

const nats = await startNats();
try {
  const api = await connectBus(nats.url, "bench-api");
  await ensureEventStream(api);
  const changes: PodChange[] = Array.from({ length: N }, (_, i) => ({
    type: "ADDED",
    namespace: `ns-${i % 50}`,
    name: `pod-${i}`,
    node: `node-${i % 100}`,
    labels: { app: `app-${i % 20}`, tier: "web" },
  }));
  const t0 = performance.now();
  await publishPodChanges(api, 1, changes, 1_000);
  console.log(JSON.stringify({ stored: N, publishPerSec: Math.round((N / (performance.now() - t0)) * 1_000) }));
  const sub = await connectBus(nats.address, "bench-subscriber", await nats.addUser("subscriber", subscriberNatsPermissions()));
  for (let r = 0; r < ROUNDS; r++) {
    for (const m of [
      await measure("raw JetStream (ordered consumer, no decode)", () => raw(sub)),
      await measure("subscribe() durable (decode + ack each)", () => typed(sub, `bench-${r}`)),
      await measure("subscribe() ephemeral (decode, no ack)", () => typed(sub, undefined)),
    ])
      console.log(JSON.stringify({ round: r + 1, ...m }));
  }
  await sub.close();
  await api.close();
} finally {
  await nats.stop();
}
