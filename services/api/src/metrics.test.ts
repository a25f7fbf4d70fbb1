// The api's metric wiring: store operations timed by operation and resource,
// the relay's lag from its backlog reports.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Registry } from "prom-client";
import { apiMetrics } from "./metrics.js";
import { instrumentStorage } from "./storage/instrumented-storage.js";
import { MemoryStore } from "./storage/memory-store.js";

describe("api metrics", () => {
  it("times every store operation by operation (a write by its mode) and resource, failed ones too", async () => {
    const registry = new Registry();
    const m = apiMetrics(registry);
    const store = instrumentStorage(new MemoryStore(), m.storeLatency);
    const op = { resource: "pods", namespace: "default", name: "web", object: new Uint8Array([1]), event: new Uint8Array([2]), subject: "x" };
    const rev = await store.write({ mode: "create", ...op });
    await store.get("pods", "default", "web");
    await store.list("pods");
    await assert.rejects(store.write({ mode: "update", ...op, expectedRevision: rev + 100 }));
    assert.ok(store instanceof MemoryStore, "the proxy keeps the store's class");
    const text = await registry.metrics();
    for (const operation of ["create", "get", "list", "update"])
      assert.match(text, new RegExp(`choreo_api_store_request_duration_seconds_count\\{operation="${operation}",resource="pods"\\} 1`));
  });

  it("the relay lag is how long the backlog has been non-empty, 0 once it is empty", async () => {
    const registry = new Registry();
    let now = 1_000_000;
    const m = apiMetrics(registry, () => now);
    const lag = async () => (await registry.getSingleMetric("choreo_relay_lag_seconds")!.get()).values[0]?.value;
    assert.equal(await lag(), 0);
    m.reportBacklog(5);
    now += 1500;
    m.reportBacklog(3); // still behind since the first report
    now += 1000;
    assert.equal(await lag(), 2.5);
    m.reportBacklog(0);
    assert.equal(await lag(), 0);
    assert.match(await registry.metrics(), /choreo_relay_backlog 0/);
  });
});
