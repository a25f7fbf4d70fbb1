// test-tier: servers
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { connectBus } from "../bus/stream.js";
import { startNats, startRedis, type ServerHandle } from "./servers.js";
import { startProcess } from "./process.js";

describe("harness", () => {
  let nats: ServerHandle;
  let redis: ServerHandle;
  before(async () => {
    [nats, redis] = await Promise.all([startNats(), startRedis()]);
  });
  after(async () => {
    await Promise.all([nats?.stop(), redis?.stop()]);
  });

  it("keeps JetStream data across kill -9 and restart", async () => {
    let nc = await connectBus(nats.url, "harness-test");
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "T", subjects: ["t.>"] });
    await jetstream(nc).publish("t.a", "1");
    await nc.close();
    await nats.kill();
    await nats.restart();
    nc = await connectBus(nats.url, "harness-test");
    const info = await (await jetstreamManager(nc)).streams.info("T");
    assert.equal(info.state.last_seq, 1);
    await nc.close();
  });

  it("keeps Redis data (AOF) across kill -9 and restart", async () => {
    let r = new Redis(redis.url);
    await r.set("k", "v");
    // appendfsync everysec: the write reaches the AOF file within a second.
    await new Promise((res) => setTimeout(res, 1500));
    r.disconnect();
    await redis.kill();
    await redis.restart();
    r = new Redis(redis.url);
    assert.equal(await r.get("k"), "v");
    r.disconnect();
  });

  it("reports a process that exits before it is ready, with its output", async () => {
    await assert.rejects(
      startProcess({ name: "false", cmd: "sh", args: ["-c", "echo boom; exit 3"], readyWhen: /never/ }),
      /false exited before it was ready:\s+boom/,
    );
  });
});
