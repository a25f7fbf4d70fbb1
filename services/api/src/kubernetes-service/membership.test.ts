// test-tier: servers
// The api replicas' membership on a real redis-server: each renews its
// entry, the live ones are listed in a stable order with the caller always
// among them, an entry past its expiry is dropped (and removed from the
// hash), one renewed again is back, and leaving removes it.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { startRedis, waitFor, type ServerHandle } from "@choreo/kit/testing";
import { MEMBERS_KEY, RedisMembership } from "./membership.js";

describe("api membership in Redis", () => {
  let server: ServerHandle;
  let redis: Redis;
  before(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  after(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it("lists the live replicas, drops an expired one, takes it back when it renews, and forgets one that left", async () => {
    const a = new RedisMembership(redis, { ip: "192.0.2.10", port: 6443 }, { renewMs: 100, ttlMs: 60_000 });
    const b = new RedisMembership(redis, { ip: "192.0.2.9", port: 6443 }, { renewMs: 100, ttlMs: 60_000 });
    // Short-lived: expires 2 s after each renewal (300 ms was too short for the checks below on a loaded machine).
    const c = new RedisMembership(redis, { ip: "192.0.2.10", port: 6444 }, { renewMs: 100, ttlMs: 2_000 });
    await Promise.all([a.renew(), b.renew(), c.renew()]);
    const all = [
      { ip: "192.0.2.9", port: 6443 },
      { ip: "192.0.2.10", port: 6443 },
      { ip: "192.0.2.10", port: 6444 },
    ];
    assert.deepEqual(await a.members(), all);
    assert.deepEqual(await b.members(), all, "every replica computes the same list");

    await waitFor(async () => (await a.members()).length === 2, { timeoutMs: 10_000, message: "c expired" });
    assert.deepEqual(await a.members(), all.slice(0, 2), "c expired");
    assert.equal(await redis.hexists(MEMBERS_KEY, "192.0.2.10:6444"), 0, "and removed from the hash");
    assert.deepEqual(await c.members(), all, "c still counts itself");
    await c.renew();
    assert.deepEqual(await b.members(), all, "renewed: back");

    await b.leave();
    assert.deepEqual(await a.members(), [all[1], all[2]]);
    // A malformed entry (not address:port) is dropped, never listed.
    await redis.hset(MEMBERS_KEY, "nonsense", String(Date.now() + 60_000));
    assert.deepEqual(await a.members(), [all[1], all[2]]);
    assert.equal(await redis.hexists(MEMBERS_KEY, "nonsense"), 0);
  });
});
