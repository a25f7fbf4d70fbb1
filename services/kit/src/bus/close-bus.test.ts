// test-tier: servers
// closeBus and drainSubscriptions against a real nats-server that stops
// answering (SIGSTOP: the TCP connection stays up, nothing comes back) —
// the state a SIGTERM finds a process in during a NATS outage.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startNats, type NatsHandle } from "../process/index.js";
import { closeBus, connectBus, drainSubscriptions } from "./stream.js";

describe("closeBus", () => {
  let nats: NatsHandle;
  let stopped = false;
  const pause = async (): Promise<void> => {
    process.kill(nats.process().pid, "SIGSTOP");
    stopped = true;
    // Until the signal has landed the server may still answer a PING sent now.
    await new Promise((resolve) => setTimeout(resolve, 200));
  };
  const resume = (): void => {
    if (stopped) process.kill(nats.process().pid, "SIGCONT");
    stopped = false;
  };
  before(async () => {
    nats = await startNats();
  });
  after(async () => {
    resume();
    await nats.stop();
  });

  it("drains a connection whose server answers: messages published before it are delivered, then it is closed", async () => {
    const nc = await connectBus(nats.url, "close-bus-live");
    const got: string[] = [];
    const sub = nc.subscribe("close-bus.live", {
      callback: (_e, m) => {
        got.push(m.string());
      },
    });
    await nc.flush();
    for (let i = 0; i < 20; i++) nc.publish("close-bus.live", String(i));
    await closeBus(nc);
    assert.equal(nc.isClosed(), true);
    assert.equal(sub.isClosed(), true);
    assert.equal(got.length, 20);
  });

  it("closes a connection whose server stopped answering within its timeout: nats.js's own drain would leave it open and reconnecting for good", async () => {
    const nc = await connectBus(nats.url, "close-bus-stopped");
    nc.subscribe("close-bus.stopped");
    await nc.flush();
    const raw = await connectBus(nats.url, "close-bus-raw-drain");
    await raw.flush();
    await pause();
    try {
      // The comparison: nats.js's drain alone, with the server stopped, has neither finished nor closed.
      let rawSettled = false;
      void raw.drain().then(
        () => (rawSettled = true),
        () => (rawSettled = true),
      );
      const started = Date.now();
      await closeBus(nc, 500);
      const took = Date.now() - started;
      assert.equal(nc.isClosed(), true, "closed");
      assert.equal(await nc.closed(), undefined, "closed without an error: no reconnect timers left");
      assert.ok(took < 5_000, `closeBus returned after ${took} ms`);
      assert.equal(rawSettled || raw.isClosed(), false, "nats.js's drain alone is still waiting");
    } finally {
      resume();
      await raw.close().catch(() => undefined);
    }
  });

  it("drainSubscriptions: handled and unsubscribed when the server answers; unsubscribed after the timeout when it does not", async () => {
    const nc = await connectBus(nats.url, "drain-subs");
    try {
      const a = nc.subscribe("drain-subs.a", { callback: () => undefined });
      await nc.flush();
      await drainSubscriptions([a]);
      assert.equal(a.isClosed(), true);
      const b = nc.subscribe("drain-subs.b", { callback: () => undefined });
      await nc.flush();
      await pause();
      const started = Date.now();
      await drainSubscriptions([b], 300);
      assert.ok(Date.now() - started < 3_000);
      assert.equal(b.isClosed(), true, "unsubscribed though its drain got no answer");
    } finally {
      resume();
      await closeBus(nc);
    }
  });
});
