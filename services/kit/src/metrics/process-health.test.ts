// test-tier: servers
// An actor's /readyz follows its bus (a real nats-server killed -9 and
// restarted), its informers' first list and its leader elector's lease.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { Registry } from "prom-client";
import { connectBus } from "../bus/index.js";
import { startNats, type ServerHandle } from "../process/servers.js";
import { processHealth, serveMetrics, type MetricsServer } from "./index.js";

async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("processHealth on an actor's metrics server", () => {
  let nats: ServerHandle;
  let nc: NatsConnection;
  let srv: MetricsServer;
  let synced = false;
  let leaseHealthy = true;
  const get = async (p: string) => {
    const r = await fetch(`http://127.0.0.1:${srv.port}${p}`);
    return { status: r.status, body: await r.text() };
  };
  before(async () => {
    nats = await startNats();
    nc = await connectBus(nats.url, "process-health-test");
    const informer = { name: "informer-pods", start: () => Promise.resolve(), hasSynced: () => synced };
    const elector = { name: "leader-x", start: () => Promise.resolve(), leaseHealthy: () => leaseHealthy };
    const other = { name: "controller", start: () => Promise.resolve() };
    srv = serveMetrics({ registry: new Registry(), port: 0, ...processHealth(nc, [informer, elector, other]) });
    await srv.ready;
  });
  after(async () => {
    await srv.close();
    await nc.close();
    await nats.stop();
  });

  it("names bus, informers-synced and leader-election; fails what fails", async () => {
    assert.deepEqual(await get("/readyz"), {
      status: 500,
      body: "[+]bus ok\n[-]informers-synced failed: reason withheld\n[+]leader-election ok\nreadyz check failed\n",
    });
    synced = true;
    assert.deepEqual(await get("/readyz"), { status: 200, body: "ok" });
    leaseHealthy = false;
    assert.match((await get("/readyz?verbose")).body, /\[-\]leader-election failed/);
    leaseHealthy = true;
    assert.deepEqual(await get("/livez?verbose"), { status: 200, body: "[+]ping ok\n[+]event-loop ok\n[+]bus-open ok\nlivez check passed\n" });
  });

  it("kill -9 of nats-server: /readyz fails naming bus (livez stays ok), and passes again once it is back", async () => {
    await nats.kill();
    await until(async () => (await get("/readyz")).status === 500, 10_000, "readyz to fail");
    assert.match((await get("/readyz")).body, /\[-\]bus failed/);
    assert.equal((await get("/livez")).status, 200);
    await nats.restart();
    await until(async () => (await get("/readyz")).status === 200, 20_000, "readyz to pass again");
  });
});
