// test-tier: servers
// A forged pod event on the bus runs nothing: a node agent whose connection
// requires the api's signature ignores a pod published by someone else (and
// a genuine message copied to another place in the log), while an agent
// without that requirement — the control — runs the forged pod, which shows
// the forgery itself reaches the agents.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { jetstream } from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { Registry } from "prom-client";
import { unwrap } from "@choreo/kit";
import {
  connectBus,
  decodeEvent,
  EVENT_SIGNATURE_HEADER,
  EVENT_STREAM,
  encodeEvent,
  eventSubject,
  requireSignedEvents,
  streamState,
  type EventVerifier,
} from "@choreo/kit/bus";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { startStack, type Stack } from "@choreo/api/testing";
import { NodeAgent } from "./agent.js";
import { hollowNodeConfig } from "./hollow-nodes.js";
import { HollowRuntime } from "./runtime/hollow.js";

function podOn(name: string, node: string, uid = ""): Pod {
  const obj = fromKubeJson({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", ...(uid ? { uid, resourceVersion: "1" } : {}) },
    spec: { nodeName: node, containers: [{ name: "app", image: "evil" }] },
  });
  return unwrap(obj) as Pod;
}

describe("signed events: a forged pod on the bus runs nothing", () => {
  let s: Stack;
  let guardedConn: NatsConnection;
  let plainConn: NatsConnection;
  const refused: string[] = [];
  const agents: { runtime: HollowRuntime; ac: AbortController; done: Promise<void> }[] = [];

  const startAgent = (index: number, nc: NatsConnection): HollowRuntime => {
    const node = hollowNodeConfig(index, "node-");
    const runtime = new HollowRuntime({ podCidr: node.podCidr, hostIp: node.internalIp, startDelayMs: 10 });
    const agent = new NodeAgent({ client: s.client, nc, jsm: s.jsm, log: silentLogger(), node, runtime, leaseRenewMs: 500 });
    const ac = new AbortController();
    agents.push({ runtime, ac, done: agent.start(ac.signal) });
    return runtime;
  };
  const names = (r: HollowRuntime): string[] => r.listPods().map((p) => p.name);

  /** Publishes straight into the event log, as any client of the bus could. */
  const forge = async (pod: Pod, signature?: string): Promise<number> => {
    const seq = (await streamState(s.jsm)).lastRevision + 1;
    const data = encodeEvent({
      type: "ADDED",
      object: { kind: { $case: "pod", value: pod } },
      status: undefined,
      revision: seq,
      prevLabels: {},
      prevFields: {},
      hasPrev: false,
    });
    const h = headers();
    if (signature) h.set(EVENT_SIGNATURE_HEADER, signature);
    const ack = await jetstream(plainConn).publish(eventSubject("pods", "default", pod.metadata!.name, pod.spec!.nodeName), data, { headers: h });
    return ack.seq;
  };

  before(async () => {
    s = await startStack();
    guardedConn = await connectBus(s.nats.url, "guarded-agent");
    plainConn = await connectBus(s.nats.url, "plain-agent");
    requireSignedEvents(guardedConn, { verifier: s.verifier, onRejected: (why) => refused.push(why) });
  });
  after(async () => {
    for (const a of agents) a.ac.abort();
    await Promise.all(agents.map((a) => a.done.catch(() => undefined)));
    await guardedConn?.close();
    await plainConn?.close();
    await s?.stop();
  });

  it("runs the api's pods and refuses a forged one and a replayed one", async () => {
    const guarded = startAgent(0, guardedConn);
    const control = startAgent(1, plainConn);
    unwrap(
      await s.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "genuine", namespace: "default" },
          spec: { nodeName: "node-0", containers: [{ name: "app", image: "nginx" }] },
        }),
      ),
    );
    await waitFor(() => names(guarded).includes("genuine") || undefined, { timeoutMs: 20_000 });
    // The agent's status write of it done first: a forgery published directly into the log while that write is
    // in flight takes the sequence the api gives the write, and the agent, which knows its own write by that
    // revision, takes its copy instead of the forgery's bytes — nothing runs, but nothing is refused either.
    await waitFor(async () => (await s.client.typed("pod").get("default", "genuine")).status?.phase === "Running", {
      timeoutMs: 20_000,
      message: "genuine Running in the api",
    });

    // A genuine, signed message of the log, copied to a new place with its signature (a replay).
    const js = jetstream(plainConn);
    const consumer = await js.consumers.get(EVENT_STREAM, { filter_subjects: "choreo.ev.pods.node-0.default.genuine" });
    const original = await consumer.next({ expires: 2_000 });
    assert.ok(original, "the genuine pod's event is in the log");
    const signature = original.headers?.get(EVENT_SIGNATURE_HEADER);
    assert.ok(signature, "the relay signed it");

    await forge(podOn("forged", "node-0", "f0f0f0f0-0000-4000-8000-000000000001"));
    await forge(podOn("forged-control", "node-1", "f0f0f0f0-0000-4000-8000-000000000002"));
    // The replay: the genuine pod's bytes and signature again, same subject, a later sequence.
    const h = headers();
    h.set(EVENT_SIGNATURE_HEADER, signature);
    await js.publish(original.subject, original.data, { headers: h });

    // The control agent (no signature required) runs what it was sent: the forgery does reach agents.
    await waitFor(() => names(control).includes("forged-control") || undefined, { timeoutMs: 20_000 });
    await waitFor(() => (refused.includes("unsigned") && refused.includes("out-of-place")) || undefined, {
      timeoutMs: 30_000,
      get message() {
        return `the guarded agent refuses the forgery (unsigned) and the replay (out-of-place); refused so far: ${JSON.stringify(refused)}`;
      },
    });
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(names(guarded).sort(), ["genuine"], "the guarded node runs only the api's pod");
  });

  it("takes its own status write back as the api answered it: one verification per pod (the bind), not two", async () => {
    const countingConn = await connectBus(s.nats.url, "counting-agent");
    const verified: string[] = [];
    // The api's verifier, counting what it is asked to check.
    const counting = Object.create(s.verifier) as EventVerifier;
    counting.verify = (data, signature) => (verified.push(decodeEvent(data).object?.kind?.value?.metadata?.name ?? ""), s.verifier.verify(data, signature));
    requireSignedEvents(countingConn, { verifier: counting });
    try {
      const node = hollowNodeConfig(2, "node-");
      const runtime = new HollowRuntime({ podCidr: node.podCidr, hostIp: node.internalIp, startDelayMs: 10 });
      const registry = new Registry();
      const agent = new NodeAgent({ client: s.client, nc: countingConn, jsm: s.jsm, log: silentLogger(), node, runtime, leaseRenewMs: 500, registry });
      const ac = new AbortController();
      agents.push({ runtime, ac, done: agent.start(ac.signal) });
      await agent.informer.waitForSync();
      for (const name of ["own-1", "own-2"])
        await s.client.create(
          fromKubeJson({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name, namespace: "default" },
            spec: { nodeName: "node-2", containers: [{ name: "app", image: "nginx" }] },
          }),
        );
      // Each Running in the api and, at that same revision, in the agent's informer (its own write came back).
      for (const name of ["own-1", "own-2"])
        await waitFor(
          async () => {
            const stored = unwrap(await s.client.get("pods", "default", name)) as Pod;
            const cached = agent.informer.get(`default/${name}`);
            return (stored.status?.phase === "Running" && cached?.metadata?.resourceVersion === stored.metadata?.resourceVersion) || undefined;
          },
          { timeoutMs: 20_000, message: `${name} Running in the informer` },
        );
      assert.equal(agent.informer.get("default/own-1")?.status?.phase, "Running");
      assert.deepEqual(verified.filter((n) => n.startsWith("own-")).sort(), ["own-1", "own-2"], "each pod's bind verified once, its status write not again");
      // The write coming back changes only the status, to what the agent wrote: not reconciled again (the kubelet's
      // pod config does not sync a pod for a status-only update); the status writer forgot each pod.
      const reconciles = (await registry.getSingleMetric("controller_runtime_reconcile_total")?.get())?.values.reduce((n, v) => n + v.value, 0);
      assert.equal(reconciles, 2, "one reconcile per pod: its bind");
      assert.equal(agent.statuses.size, 0);
    } finally {
      await countingConn.close();
    }
  });

  it("refuses a message signed with another key", async () => {
    const { generateKeyPairSync, sign } = await import("node:crypto");
    const other = generateKeyPairSync("ed25519");
    const pod = podOn("forged-signed", "node-0", "f0f0f0f0-0000-4000-8000-000000000003");
    const seq = (await streamState(s.jsm)).lastRevision + 1;
    const data = encodeEvent({
      type: "ADDED",
      object: { kind: { $case: "pod", value: pod } },
      status: undefined,
      revision: seq,
      prevLabels: {},
      prevFields: {},
      hasPrev: false,
    });
    await forge(pod, sign(null, data, other.privateKey).toString("base64"));
    await waitFor(() => refused.includes("bad-signature") || undefined, { timeoutMs: 10_000 });
    assert.ok(!names(agents[0]!.runtime).includes("forged-signed"));
  });
});
