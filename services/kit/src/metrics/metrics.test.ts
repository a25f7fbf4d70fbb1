import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { createRegistry, getOrCreateCounter, HealthChecks, metricsServer, serveMetrics } from "./index.js";

describe("metrics", () => {
  it("the registry labels every metric with the service and has default metrics", async () => {
    const registry = createRegistry("scheduler");
    const c = getOrCreateCounter(registry, "choreo_test_total", "a test counter", ["kind"]);
    c.inc({ kind: "pod" });
    const text = await registry.metrics();
    assert.match(text, /choreo_test_total\{kind="pod",service="scheduler"\} 1/);
    assert.match(text, /process_cpu_user_seconds_total/);
  });

  it("getOrCreate returns the same metric, and refuses another type", () => {
    const registry = new Registry();
    const a = getOrCreateCounter(registry, "x_total", "x", ["name"]);
    assert.equal(getOrCreateCounter(registry, "x_total", "x", ["name"]), a);
    assert.throws(() => getOrCreateCounter(new Registry(), "x total", "bad name", []));
  });

  it("serves /metrics and /healthz on port 0", async () => {
    const registry = createRegistry("api");
    let healthy = true;
    const srv = serveMetrics({ registry, port: 0, healthy: () => healthy });
    try {
      await srv.ready;
      assert.ok(srv.port > 0);
      const base = `http://127.0.0.1:${srv.port}`;
      const m = await fetch(`${base}/metrics`);
      assert.equal(m.status, 200);
      assert.match(m.headers.get("content-type") ?? "", /text\/plain/);
      assert.match(await m.text(), /service="api"/);
      const h = await fetch(`${base}/healthz`);
      assert.equal(h.status, 200);
      assert.equal(await h.text(), "ok");
      healthy = false;
      const u = await fetch(`${base}/healthz`);
      assert.equal(u.status, 503);
      await u.text();
      const nf = await fetch(`${base}/nope`);
      assert.equal(nf.status, 404);
      await nf.text();
    } finally {
      await srv.close();
    }
  });

  it("/livez and /readyz answer from named checks as kube-apiserver (ok, 500 naming them, ?verbose)", async () => {
    let synced = false;
    const readyz = new HealthChecks({ bus: () => true, informers: () => synced, leader: () => Promise.reject(new Error("x")) });
    const srv = serveMetrics({ registry: new Registry(), port: 0, readyz });
    try {
      await srv.ready;
      const get = async (p: string) => {
        const r = await fetch(`http://127.0.0.1:${srv.port}${p}`);
        return { status: r.status, body: await r.text() };
      };
      assert.deepEqual(await get("/livez"), { status: 200, body: "ok" });
      assert.deepEqual(await get("/livez?verbose"), { status: 200, body: "[+]ping ok\nlivez check passed\n" });
      assert.deepEqual(await get("/readyz"), {
        status: 500,
        body: "[+]bus ok\n[-]informers failed: reason withheld\n[-]leader failed: reason withheld\nreadyz check failed\n",
      });
      synced = true;
      readyz.add("leader", () => true);
      assert.deepEqual(await get("/readyz"), { status: 200, body: "ok" });
      assert.deepEqual(await get("/readyz?verbose"), { status: 200, body: "[+]bus ok\n[+]informers ok\n[+]leader ok\nreadyz check passed\n" });
    } finally {
      await srv.close();
    }
  });

  it("ready rejects when the port is taken", async () => {
    const a = serveMetrics({ registry: new Registry(), port: 0 });
    await a.ready;
    const b = serveMetrics({ registry: new Registry(), port: a.port });
    try {
      await assert.rejects(b.ready, /EADDRINUSE/);
    } finally {
      await b.close();
      await a.close();
    }
  });

  it("the Runnable listens until abort, then closes", async () => {
    const ac = new AbortController();
    const run = metricsServer({ registry: new Registry(), port: 0 }).start(ac.signal);
    await new Promise((r) => setTimeout(r, 20));
    ac.abort();
    await run;
  });
});
