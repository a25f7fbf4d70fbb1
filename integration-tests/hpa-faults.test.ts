// test-tier: servers
// The HorizontalPodAutoscaler through kill -9 of the replication actor (it
// hosts the HPA controller), on a hollow node: a hollow pod uses what it
// requests, so an RC of pods requesting 64Mi is at 100 % memory utilization,
// a target of 50 % asks for twice the pods and one of 400 % for a quarter.
// - Killed between the decision and the scale (the fault point
//   CHOREO_FAULT_CRASH_BEFORE_HPA_SCALE: the actor kill -9s itself once it has
//   decided 2 → 4, before writing it): nothing was written, and the restarted
//   actor decides again and scales to the same 4.
// - Killed while a scale-down waits in its stabilization window: the
//   recommendations it remembered are gone, and the restarted controller
//   starts from the current size (Kubernetes' recordInitialRecommendation),
//   so the scale-down comes no sooner than a whole window after the restart —
//   never at once — and the replicas only ever go one way (no flapping).
// - kill -9 of the api and a nats-server restart while it holds: no size
//   changes, and a new target afterwards is acted on at once (its informer
//   came back).
// Every value of the RC's spec.replicas is recorded by an informer (the event
// log), so a flap between two polls cannot hide.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { unwrap } from "@choreo/kit";
import type { HorizontalPodAutoscaler } from "@choreo/kit/gen/choreo/autoscaling/v2/autoscaling";
import { Informer } from "@choreo/kit/informer";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";

/** The scale-down stabilization window the HPA sets (s). */
const WINDOW_S = 30;
const REPLICATION_ENV = { CHOREO_EVENTS: "0" };

describe("HorizontalPodAutoscaler through kill -9 of the replication actor", () => {
  let c: TestCluster;
  const ac = new AbortController();
  /** Every spec.replicas the RC "mem" had, in order (consecutive repeats dropped). */
  const sizes: number[] = [];
  let rcs: Informer<"replicationController">;
  const replicas = (): number => rcs.get("default/mem")?.spec?.replicas ?? -1;
  const hpa = async (): Promise<HorizontalPodAutoscaler> => unwrap(await c.client.get("horizontalpodautoscalers", "default", "mem")) as HorizontalPodAutoscaler;
  const target = (percent: number) => [{ type: "Resource", resource: { name: "memory", target: { type: "Utilization", averageUtilization: percent } } }];
  const restartReplication = async (env: Record<string, string> = {}): Promise<void> => {
    await c.actors.get("replication")?.kill();
    await c.startActor("replication", { ...REPLICATION_ENV, ...env });
  };

  before(async () => {
    c = await startCluster({
      actors: [{ name: "node-agent", env: { CHOREO_HOLLOW_NODES: "1" } }, { name: "scheduler" }, { name: "replication", env: REPLICATION_ENV }],
    });
    await withLogsOnFailure(c, async () => {
      await waitFor(async () => (await c.client.list("nodes")).items.length === 1, { timeoutMs: 30_000, message: "the hollow node" });
      rcs = new Informer<"replicationController">({
        client: c.client,
        nc: c.nc,
        jsm: await jetstreamManager(c.nc),
        kind: "replicationController",
        namespace: "default",
        log: silentLogger(),
      });
      const record = (rc: { metadata?: { name: string }; spec?: { replicas?: number } }): void => {
        const n = rc.spec?.replicas;
        if (rc.metadata?.name === "mem" && n !== undefined && sizes.at(-1) !== n) sizes.push(n);
      };
      rcs.addEventHandler({ onAdd: record, onUpdate: (_o, n) => record(n) });
      void rcs.start(ac.signal).catch(() => undefined);
      await rcs.waitForSync();
      await c.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "ReplicationController",
          metadata: { name: "mem", namespace: "default" },
          spec: {
            replicas: 2,
            selector: { app: "mem" },
            template: {
              metadata: { labels: { app: "mem" } },
              spec: { containers: [{ name: "app", image: "nginx", resources: { requests: { cpu: "10m", memory: "64Mi" } } }] },
            },
          },
        }),
      );
      await waitFor(
        async () =>
          (unwrap(await c.client.get("replicationcontrollers", "default", "mem")) as { status?: { readyReplicas?: number } }).status?.readyReplicas === 2,
        {
          timeoutMs: 60_000,
          message: "2 ready pods",
        },
      );
    });
  });
  after(async () => {
    ac.abort();
    await c?.stop();
  });

  it("killed between the decision and the scale: nothing written, and after the restart it scales to the same size", () =>
    withLogsOnFailure(c, async () => {
      // This actor kill -9s itself at its first scale decision.
      await restartReplication({ CHOREO_FAULT_CRASH_BEFORE_HPA_SCALE: "1" });
      const crashing = c.actors.get("replication")!;
      await c.client.create(
        fromKubeJson({
          apiVersion: "autoscaling/v2",
          kind: "HorizontalPodAutoscaler",
          metadata: { name: "mem", namespace: "default" },
          spec: {
            scaleTargetRef: { apiVersion: "v1", kind: "ReplicationController", name: "mem" },
            minReplicas: 1,
            maxReplicas: 4,
            metrics: target(50),
            behavior: { scaleDown: { stabilizationWindowSeconds: WINDOW_S } },
          },
        }),
      );
      const exit = await crashing.exited;
      assert.equal(exit.signal, "SIGKILL", "the actor killed itself at the fault point");
      assert.equal(replicas(), 2, "the decided scale was not written");
      assert.deepEqual(sizes, [2]);

      const restarted = Date.now();
      await c.startActor("replication", REPLICATION_ENV);
      await waitFor(() => replicas() === 4, { timeoutMs: 60_000, message: "scaled to 4 after the restart" });
      const scaledIn = Date.now() - restarted;
      await waitFor(async () => (await hpa()).status?.desiredReplicas === 4, { timeoutMs: 60_000, message: "the HPA's status: 4 desired" });
      const h = await hpa();
      assert.equal(h.status?.currentReplicas, 2, "the status of the sync that scaled: from 2");
      assert.ok(h.status?.lastScaleTime, "lastScaleTime set");
      console.log(`hpa faults: killed before writing 2 → 4; scaled to 4 ${scaledIn} ms after the restart began`);
      assert.deepEqual(sizes.slice(0, 1), [2]);
      assert.ok(
        sizes.every((n, i) => i === 0 || n > sizes[i - 1]!),
        `only up: ${sizes.join(" → ")}`,
      );
    }));

  it("killed while a scale-down waits in its window: it scales down no sooner than a window after the restart, without flapping", () =>
    withLogsOnFailure(c, async () => {
      await waitFor(async () => (await hpa()).status?.currentReplicas === 4, { timeoutMs: 60_000, message: "the HPA saw its 4 pods" });
      // 100 % against 400 %: one pod is enough — held by the 30 s window.
      const patched = Date.now();
      await c.client.patch("horizontalpodautoscalers", "default", "mem", "application/merge-patch+json", { spec: { metrics: target(400) } });
      await waitFor(
        async () => {
          const able = (await hpa()).status?.conditions.find((x) => x.type === "AbleToScale");
          return able?.reason === "ScaleDownStabilized";
        },
        { timeoutMs: 30_000, intervalMs: 100, message: "the scale-down recommended and held by the window" },
      );
      assert.equal(replicas(), 4, "held");
      await c.actors.get("replication")?.kill();
      const restarted = Date.now();
      await c.startActor("replication", REPLICATION_ENV);
      await waitFor(() => replicas() === 1, { timeoutMs: 120_000, intervalMs: 50, message: "scaled down to 1" });
      const downAfter = Date.now() - restarted;
      console.log(
        `hpa faults: scale-down recommended ${restarted - patched} ms after the patch, actor killed then; ` +
          `scaled down ${downAfter} ms after the restart began (window ${WINDOW_S} s)`,
      );
      assert.ok(downAfter >= WINDOW_S * 1000, `no scale-down before a whole window after the restart (came after ${downAfter} ms)`);
      await waitFor(async () => (await hpa()).status?.desiredReplicas === 1, { timeoutMs: 60_000, message: "the HPA's status: 1 desired" });
      const down = sizes.slice(sizes.indexOf(4));
      assert.ok(
        down.every((n, i) => i === 0 || n < down[i - 1]!),
        `from 4 only down, never back up: ${sizes.join(" → ")}`,
      );
    }));

  it("kill -9 of the api and a nats-server restart change no size; a new target afterwards is acted on at once", () =>
    withLogsOnFailure(c, async () => {
      const before = sizes.length;
      const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
      await c.killApi(0);
      await sleep(1_000);
      await c.startApi(0);
      await c.nats.kill();
      await sleep(3_000);
      await c.nats.restart();
      const cleared = Date.now();
      // 100 % against 50 %: twice the pods, at most 2 — the HPA's informer and the api are back.
      await waitFor(
        async () => {
          try {
            await c.client.patch("horizontalpodautoscalers", "default", "mem", "application/merge-patch+json", {
              spec: { maxReplicas: 2, metrics: target(50) },
            });
            return true;
          } catch {
            return false;
          }
        },
        { timeoutMs: 60_000, intervalMs: 500, message: "the HPA patched once the api is back" },
      );
      const patched = Date.now();
      await waitFor(() => replicas() === 2, { timeoutMs: 60_000, intervalMs: 50, message: "scaled to 2" });
      console.log(
        `hpa faults: api and nats-server back; patch accepted ${patched - cleared} ms later, scaled 1 → 2 ${Date.now() - patched} ms after the patch`,
      );
      assert.deepEqual(sizes.slice(before - 1), [1, 2], `no size change during the faults: ${sizes.join(" → ")}`);
    }));
});
