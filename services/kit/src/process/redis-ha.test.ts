// test-tier: servers
// The Redis HA harness: a primary, two replicas and three sentinels on
// loopback; kill -9 of the primary → the sentinels promote a replica, a
// sentinel-aware client writes again, and the old primary restarted comes
// back as a replica of the new one.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { waitFor } from "./process.js";
import { startRedisHa, type RedisHaHandle } from "./redis-ha.js";

describe("startRedisHa", () => {
  let ha: RedisHaHandle;
  let r: Redis;
  before(async () => {
    ha = await startRedisHa();
    r = ha.client();
  });
  after(async () => {
    r?.disconnect();
    await ha?.stop();
  });

  it("refuses clients without the passwords (data nodes and sentinels)", async () => {
    const anon = new Redis({ port: ha.nodes[0]!.port, lazyConnect: true, maxRetriesPerRequest: 0 });
    anon.on("error", () => undefined);
    await anon.connect().catch(() => undefined);
    await assert.rejects(anon.set("k", "v"), /NOAUTH|NOPERM|WRONGPASS|authentication/i);
    anon.disconnect();
    const s = new Redis({ port: ha.sentinels[0]!.port, lazyConnect: true, maxRetriesPerRequest: 0 });
    s.on("error", () => undefined);
    await s.connect().catch(() => undefined);
    await assert.rejects(s.call("SENTINEL", "masters"), /NOAUTH|authentication/i);
    s.disconnect();
  });

  it("kill -9 of the primary: a replica is promoted, the client writes again, the old primary returns as a replica", async () => {
    await r.set("before", "1");
    // Replication is asynchronous: without WAIT the last writes may die with the primary (what the api's durability modes are about).
    assert.equal(await r.wait(2, 5_000), 2);
    const old = await ha.primary();
    await old.kill();
    const t0 = Date.now();
    const now = await ha.failedOverFrom(old.port);
    assert.notEqual(now.port, old.port);
    let lastErr = "";
    await waitFor(
      async () => {
        try {
          await r.set("after", "1");
          return true;
        } catch (err) {
          lastErr = String(err);
          return false;
        }
      },
      { timeoutMs: 30_000, message: "writes accepted by the new primary" },
    ).catch((err: Error) => {
      err.message += ` (last: ${lastErr}; status ${r.status})`;
      throw err;
    });
    console.log(`redis-ha: primary killed → writes accepted again after ${Date.now() - t0} ms`);
    assert.equal(await r.get("before"), "1", "replicated before the kill");
    await old.restart();
    await waitFor(
      async () => {
        const c = new Redis({ port: old.port, username: ha.credentials.user, password: ha.credentials.password, maxRetriesPerRequest: 0 });
        c.on("error", () => undefined);
        try {
          return /role:slave/.test(await c.info("replication"));
        } catch {
          return false;
        } finally {
          c.disconnect();
        }
      },
      { timeoutMs: 30_000, message: "the old primary is a replica again" },
    );
  });
});
