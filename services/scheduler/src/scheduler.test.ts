// The scheduler against a real api (nats-server + redis-server in-process).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { milliCpu } from "@choreo/kit/apimachinery";
import type { Event, Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { runAll } from "@choreo/kit/lifecycle";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { startStack, type Stack } from "@choreo/api/testing";
import { buildActors, type Actors } from "./actors.js";
import { loadConfig } from "./config.js";
import { fakeNode } from "./testing.js";

const WAIT = { timeoutMs: 25_000 };

describe("scheduler against the api", () => {
  let s: Stack;
  const runs: { ac: AbortController; done: Promise<void>; actors: Actors }[] = [];
  const startScheduler = () => {
    const actors = buildActors({ client: s.client, nc: s.nc, jsm: s.jsm, log: silentLogger() }, { ...loadConfig({}), nodeLifecycle: false, workers: 4 });
    const ac = new AbortController();
    const r = { ac, done: runAll(actors.runnables, ac.signal), actors };
    runs.push(r);
    return r;
  };
  const pods = async (): Promise<Pod[]> => (await s.client.list("pods", { namespace: "default" })).items.map((o) => unwrap(o) as Pod);
  const createPod = (name: string, cpu: string, extra: Record<string, unknown> = {}) =>
    s.client.create(fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "default" }, spec: { containers: [{ name: "c", image: "nginx", resources: { requests: { cpu, memory: "64Mi" } } }], ...extra } }));
  const assertNoOvercommit = async () => {
    const nodes = (await s.client.list("nodes")).items.map((o) => unwrap(o) as Node);
    const all = await pods();
    for (const n of nodes) {
      const used = all.filter((p) => p.spec?.nodeName === n.metadata?.name).reduce((sum, p) => sum + Number(milliCpu(p.spec!.containers[0]!.resources!.requests.cpu!)), 0);
      assert.ok(used <= Number(milliCpu(n.status!.allocatable.cpu!)), `node ${n.metadata?.name} holds ${used}m`);
    }
  };

  before(async () => {
    s = await startStack();
    const nodes = s.client.typed("node");
    for (const name of ["n1", "n2", "n3"]) {
      const want = fakeNode(name, { cpu: "2", memory: "8Gi", pods: "110" });
      want.metadata!.uid = "";
      const created = await nodes.create({ ...want, status: undefined });
      await nodes.updateStatus({ ...created, status: want.status });
    }
  });
  after(async () => {
    for (const r of runs) r.ac.abort();
    await Promise.all(runs.map((r) => r.done.catch(() => undefined)));
    await s?.stop();
  });

  it("binds every pod that fits, none over capacity; a pod that fits nowhere gets a FailedScheduling event", async () => {
    const r = startScheduler();
    for (let i = 0; i < 10; i++) await createPod(`fit-${i}`, "500m");
    await waitFor(async () => (await pods()).filter((p) => p.spec?.nodeName).length === 10, { ...WAIT, message: "10 pods bound" });
    await assertNoOvercommit();
    // 6 CPUs, 5 used: two more 500m pods fit, a third does not.
    for (let i = 10; i < 13; i++) await createPod(`fit-${i}`, "500m");
    await createPod("huge", "3");
    await waitFor(async () => (await pods()).filter((p) => p.spec?.nodeName).length === 12, { ...WAIT, message: "12 pods bound" });
    await assertNoOvercommit();
    const failed = async () => (await s.client.list("events", { namespace: "default" })).items.map((o) => unwrap(o) as Event).filter((e) => e.reason === "FailedScheduling" && e.involvedObject?.name === "huge");
    await waitFor(async () => (await failed()).length > 0, { ...WAIT, message: "FailedScheduling event" });
    const [ev] = await failed();
    assert.equal(ev!.message, "0/3 nodes are available: 3 Insufficient cpu.");
    assert.equal(ev!.reportingComponent, "default-scheduler");
    const scheduled = (await s.client.list("events", { namespace: "default" })).items.map((o) => unwrap(o) as Event).filter((e) => e.reason === "Scheduled");
    assert.ok(scheduled.some((e) => /^Successfully assigned default\/fit-\d+ to n\d$/.test(e.message)));

    // Freeing room (a pod deleted) re-queues the unschedulable pods: no blind timer needed.
    const bound = (await pods()).filter((p) => p.spec?.nodeName && p.metadata?.name.startsWith("fit-"));
    for (const p of bound.filter((p) => p.spec?.nodeName === bound[0]!.spec?.nodeName)) await s.client.delete("pods", "default", p.metadata!.name, { gracePeriodSeconds: 0 });
    await s.client.delete("pods", "default", "huge", { gracePeriodSeconds: 0 });
    await waitFor(async () => (await pods()).every((p) => p.spec?.nodeName), { ...WAIT, message: "pending pod bound after room freed" });
    await assertNoOvercommit();
    r.ac.abort();
    await r.done;
  });

  it("two schedulers on 50 pods: each pod bound exactly once", async () => {
    for (const p of await pods()) await s.client.delete("pods", "default", p.metadata!.name, { gracePeriodSeconds: 0 });
    await waitFor(async () => (await pods()).length === 0, { ...WAIT, message: "pods gone" });
    const a = startScheduler();
    const b = startScheduler();
    await Promise.all(Array.from({ length: 50 }, (_, i) => createPod(`twin-${i}`, "10m")));
    await waitFor(async () => (await pods()).filter((p) => p.spec?.nodeName).length === 50, { ...WAIT, message: "50 pods bound" });
    const sa = a.actors.scheduler.stats;
    const sb = b.actors.scheduler.stats;
    // A successful bind is counted once; the api refuses a second bind of a pod with 409.
    await waitFor(() => sa.scheduled + sb.scheduled === 50, { ...WAIT, message: "each pod bound once" });
    assert.equal(sa.scheduled + sb.scheduled, 50);
    await assertNoOvercommit();
  });
});
