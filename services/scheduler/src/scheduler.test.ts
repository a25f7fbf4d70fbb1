// The scheduler actor on fake informers fed by a fake api (no nats, no
// redis): the claims are about its logic — fit, events, requeue on freed
// room, a refused second bind. integration-tests/two-schedulers.test.ts and
// preemption.test.ts make the same claims against the real system.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { milliCpu } from "@choreo/kit/apimachinery";
import { EventRecorder } from "@choreo/kit/events";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { wrap } from "@choreo/kit";
import { Scheduler } from "./scheduler.js";
import { FakeApi, fakeNode, fakePod } from "./testing.js";

const WAIT = { timeoutMs: 25_000 };

describe("scheduler on fake informers", () => {
  const runs: { ac: AbortController; done: Promise<void> }[] = [];
  const cluster = async () => {
    const api = new FakeApi();
    for (const name of ["n1", "n2", "n3"]) await api.create(wrap("node", fakeNode(name, { cpu: "2", memory: "8Gi", pods: "110" })));
    return api;
  };
  const startScheduler = (api: FakeApi) => {
    const scheduler = new Scheduler({
      client: api.client,
      pods: api.informer("pod"),
      nodes: api.informer("node"),
      events: new EventRecorder(api.client, "default-scheduler", silentLogger()),
      log: silentLogger(),
      workers: 4,
    });
    const ac = new AbortController();
    runs.push({ ac, done: scheduler.start(ac.signal) });
    return scheduler;
  };
  const createPod = (api: FakeApi, name: string, cpu: string) => api.create(wrap("pod", fakePod(name, { cpu, memory: "64Mi" })));
  const bound = (api: FakeApi): Pod[] => api.values("pod").filter((p) => p.spec?.nodeName);
  const assertNoOvercommit = (api: FakeApi) => {
    for (const n of api.values("node")) {
      const used = bound(api)
        .filter((p) => p.spec?.nodeName === n.metadata?.name)
        .reduce((sum, p) => sum + Number(milliCpu(p.spec!.containers[0]!.resources!.requests.cpu!)), 0);
      assert.ok(used <= Number(milliCpu(n.status!.allocatable.cpu!)), `node ${n.metadata?.name} holds ${used}m`);
    }
  };
  after(async () => {
    for (const r of runs) r.ac.abort();
    await Promise.all(runs.map((r) => r.done.catch(() => undefined)));
  });

  it("binds every pod that fits, none over capacity; a pod that fits nowhere gets a FailedScheduling event", async () => {
    const api = await cluster();
    startScheduler(api);
    for (let i = 0; i < 10; i++) await createPod(api, `fit-${i}`, "500m");
    await waitFor(() => bound(api).length === 10, { ...WAIT, message: "10 pods bound" });
    assertNoOvercommit(api);
    // 6 CPUs, 5 used: two more 500m pods fit, a third does not.
    for (let i = 10; i < 13; i++) await createPod(api, `fit-${i}`, "500m");
    await createPod(api, "huge", "3");
    await waitFor(() => bound(api).length === 12, { ...WAIT, message: "12 pods bound" });
    assertNoOvercommit(api);
    const failed = () => api.values("event").filter((e) => e.reason === "FailedScheduling" && e.involvedObject?.name === "huge");
    await waitFor(() => failed().length > 0, { ...WAIT, message: "FailedScheduling event" });
    const [ev] = failed();
    assert.equal(ev!.message, "0/3 nodes are available: 3 Insufficient cpu.");
    assert.equal(ev!.reportingComponent, "default-scheduler");
    const scheduled = api.values("event").filter((e) => e.reason === "Scheduled");
    assert.ok(scheduled.some((e) => /^Successfully assigned default\/fit-\d+ to n\d$/.test(e.message)));

    // Freeing room (a pod deleted) re-queues the unschedulable pods: no blind timer needed.
    const fits = bound(api).filter((p) => p.metadata?.name.startsWith("fit-"));
    for (const p of fits.filter((p) => p.spec?.nodeName === fits[0]!.spec?.nodeName))
      await api.delete("pods", "default", p.metadata!.name, { gracePeriodSeconds: 0 });
    await api.delete("pods", "default", "huge", { gracePeriodSeconds: 0 });
    await waitFor(() => api.values("pod").every((p) => p.spec?.nodeName), { ...WAIT, message: "pending pod bound after room freed" });
    assertNoOvercommit(api);
  });

  it("two schedulers on 50 pods: each pod bound exactly once", async () => {
    const api = await cluster();
    const a = startScheduler(api);
    const b = startScheduler(api);
    await Promise.all(Array.from({ length: 50 }, (_, i) => createPod(api, `twin-${i}`, "10m")));
    await waitFor(() => bound(api).length === 50, { ...WAIT, message: "50 pods bound" });
    // A successful bind is counted once; the api refuses a second bind of a pod with 409.
    await waitFor(() => a.stats.scheduled + b.stats.scheduled === 50, { ...WAIT, message: "each pod bound once" });
    assert.equal(a.stats.scheduled + b.stats.scheduled, 50);
    assertNoOvercommit(api);
  });
});
