// test-tier: servers
// connectBus on a real nats-server, through a relay that answers the server's greeting late: nats-server refuses
// a client that sends no CONNECT within its authentication timeout (2 s) with 'Authentication Timeout', which
// nats.js counts as an authentication error — and by default stops reconnecting for good after two in a row.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startNats, startTcpRelay, waitFor, type NatsHandle, type TcpRelay } from "../testing/index.js";
import type { Logger } from "../log/index.js";
import { connectBus, stopWhenBusClosed } from "./stream.js";

describe("connectBus: reconnects after the server refused slow greetings", () => {
  let nats: NatsHandle;
  let relay: TcpRelay;
  before(async () => {
    nats = await startNats();
    relay = await startTcpRelay(nats.port);
  });
  after(async () => {
    relay?.close();
    await nats?.stop();
  });

  /** Cuts the connection and holds every reconnection's CONNECT past the server's timeout, until `errors` of them were refused. */
  const refuseReconnections = async (nc: NatsConnection, errors: number): Promise<string[]> => {
    const seen: string[] = [];
    void (async () => {
      for await (const s of nc.status()) if (s.type === "error") seen.push(String((s.error as Error).message));
    })();
    relay.holdClientMs = 2_600;
    relay.cut();
    await waitFor(() => seen.filter((m) => /authentication timeout/i.test(m)).length >= errors || nc.isClosed(), {
      timeoutMs: 30_000,
      message: `${errors} refused reconnections`,
    });
    relay.holdClientMs = 0;
    return seen;
  };

  it("two refused reconnections in a row: choreo's connection goes on and is back once the greeting is answered in time", async () => {
    const nc = await connectBus(`nats://${nats.credentials.user}:${nats.credentials.password}@${relay.url}`, "connect-bus-test");
    try {
      const seen = await refuseReconnections(nc, 2);
      assert.ok(seen.filter((m) => /authentication timeout/i.test(m)).length >= 2, seen.join("; "));
      await waitFor(async () => !nc.isClosed() && (await nc.flush().then(() => true)), { timeoutMs: 20_000, message: "reconnected" });
      assert.equal(nc.isClosed(), false);
    } finally {
      await nc.close();
    }
  });

  it("control: nats.js' defaults give up for good on the same refusals (what the option changes)", async () => {
    const nc = await connect({
      servers: relay.url,
      user: nats.credentials.user,
      pass: nats.credentials.password,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
    });
    await refuseReconnections(nc, 2);
    await waitFor(() => nc.isClosed(), { timeoutMs: 20_000, message: "closed for good" });
  });

  it("stopWhenBusClosed: a connection closed while the process runs stops it (logged); one closed by its stop does not log", async () => {
    const errors: string[] = [];
    const log = { error: (_f: object, msg: string) => errors.push(msg) } as unknown as Logger;
    const running = new AbortController();
    const nc = await connectBus(`nats://${nats.credentials.user}:${nats.credentials.password}@${relay.url}`, "connect-bus-test-closed");
    stopWhenBusClosed(nc, running, log);
    await nc.close();
    await waitFor(() => running.signal.aborted, { timeoutMs: 5_000, message: "the process stopped" });
    assert.deepEqual(errors, ["NATS connection closed for good; stopping"]);

    const stopping = new AbortController();
    const nc2 = await connectBus(`nats://${nats.credentials.user}:${nats.credentials.password}@${relay.url}`, "connect-bus-test-stopping");
    stopWhenBusClosed(nc2, stopping, log);
    stopping.abort(new Error("SIGTERM"));
    await nc2.close();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal((stopping.signal.reason as Error).message, "SIGTERM");
    assert.equal(errors.length, 1);
  });
});
