import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { Readiness } from "./readiness.js";
import { serveReadyz } from "./readyz.js";

describe("readiness and /readyz", () => {
  let redisUp = true;
  const readiness = new Readiness()
    .add("redis", () => redisUp)
    .add("nats", async () => Promise.resolve(true))
    .add("broken", () => {
      throw new Error("a check that throws fails");
    });
  let server: http.Server;
  let base = "";
  before(async () => {
    server = http.createServer((req, res) => void serveReadyz(req, res, new URL(req.url ?? "/", "http://x"), readiness));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  it("names every check; a check that throws fails; shutdown fails for good", async () => {
    readiness.add("broken", () => true); // replaced by name
    assert.deepEqual(await readiness.report(), {
      ready: true,
      checks: [
        { name: "redis", ok: true },
        { name: "nats", ok: true },
        { name: "broken", ok: true },
        { name: "shutdown", ok: true },
      ],
    });
    const throwing = new Readiness().add("x", () => {
      throw new Error("no");
    });
    assert.equal((await throwing.report()).ready, false);
    throwing.shutdown();
    assert.deepEqual((await throwing.report()).checks.at(-1), { name: "shutdown", ok: false });
  });

  it("answers 200 ok, the list with ?verbose, 500 naming what failed", async () => {
    const ok = await fetch(`${base}/readyz`);
    assert.equal(ok.status, 200);
    assert.equal(await ok.text(), "ok");
    const verbose = await (await fetch(`${base}/readyz?verbose`)).text();
    assert.equal(verbose, "[+]redis ok\n[+]nats ok\n[+]broken ok\n[+]shutdown ok\nreadyz check passed\n");
    redisUp = false;
    const failed = await fetch(`${base}/readyz`);
    assert.equal(failed.status, 500);
    assert.match(await failed.text(), /\[-\]redis failed: reason withheld\n[\s\S]*readyz check failed\n$/);
    redisUp = true;
  });
});
