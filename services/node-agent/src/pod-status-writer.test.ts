import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { conflict, internal } from "@choreo/kit";
import type { ApiClient } from "@choreo/kit/client";
import { Pod, PodStatus } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { PodStatusWriter, isIntermediate, statusHoldMsFromEnv } from "./pod-status-writer.js";

const creating = PodStatus.fromPartial({ phase: "Pending", containerStatuses: [{ name: "c", state: { waiting: { reason: "ContainerCreating" } } }] });
const running = (ip = "10.0.0.1") =>
  PodStatus.fromPartial({
    phase: "Running",
    podIp: ip,
    containerStatuses: [{ name: "c", ready: true, state: { running: { startedAt: "2026-01-01T00:00:00Z" } } }],
  });
const pod = (rv: string, status = PodStatus.fromPartial({ phase: "Pending" })) =>
  Pod.fromPartial({ metadata: { uid: "u1", name: "p", namespace: "default", resourceVersion: rv }, spec: {}, status });

/** A fake pods/status endpoint: checks resourceVersion like the api, can hold writes at a gate and fail them. */
class FakePods {
  writes: Pod[] = [];
  stored = pod("5");
  gate: Promise<void> | undefined;
  failNext: Error[] = [];
  async updateStatus(p: Pod): Promise<Pod> {
    this.writes.push(structuredClone(p));
    await this.gate;
    const e = this.failNext.shift();
    if (e) throw e;
    const meta = p.metadata;
    if (!meta || meta.resourceVersion !== this.stored.metadata?.resourceVersion) throw conflict("pods", "p", "the object has been modified");
    this.stored = { ...p, metadata: { ...meta, resourceVersion: String(Number(meta.resourceVersion) + 1) } };
    return structuredClone(this.stored);
  }
  /** Someone else writes the pod (its resourceVersion moves on). */
  touch(): Pod {
    this.stored = { ...this.stored, metadata: { ...this.stored.metadata!, resourceVersion: String(Number(this.stored.metadata?.resourceVersion) + 1) } };
    return structuredClone(this.stored);
  }
}

function writer(holdMs: number): { w: PodStatusWriter; pods: FakePods } {
  const pods = new FakePods();
  // The writer only calls typed("pod").updateStatus; the fake stands in for that one method.
  const client = { typed: () => pods } as unknown as Pick<ApiClient, "typed">;
  return { w: new PodStatusWriter({ client, log: silentLogger(), holdMs }), pods };
}

const gate = (): { promise: Promise<void>; open: () => void } => {
  let open = (): void => undefined;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
};

describe("PodStatusWriter", () => {
  it("writes once for a pod Running within the hold window", async () => {
    const { w, pods } = writer(60_000);
    w.set(pod("5"), creating);
    assert.equal(pods.writes.length, 0, "the ContainerCreating status is held");
    w.set(pod("5"), running());
    await waitFor(() => w.pendingCount === 0, { message: "written" });
    assert.equal(pods.writes.length, 1);
    assert.equal(pods.writes[0]?.status?.phase, "Running");
    assert.equal(pods.stored.status?.phase, "Running");
  });

  it("never holds the Running status", async () => {
    const { w, pods } = writer(60_000);
    w.set(pod("5"), running());
    await waitFor(() => pods.writes.length === 1, { message: "written at once" });
    assert.equal(pods.writes[0]?.status?.phase, "Running");
  });

  it("writes the intermediate status once the window has passed, and at once with window 0", async () => {
    const { w, pods } = writer(30);
    w.set(pod("5"), creating);
    await waitFor(() => pods.writes.length === 1, { message: "written after the window" });
    assert.equal(pods.writes[0]?.status?.phase, "Pending");
    const zero = writer(0);
    zero.w.set(pod("5"), creating);
    await waitFor(() => zero.pods.writes.length === 1, { message: "written at once" });
  });

  it("does not hold the intermediate status of a pod that already reported one", async () => {
    const { w, pods } = writer(60_000);
    w.set(pod("5", running()), creating);
    await waitFor(() => pods.writes.length === 1, { message: "written at once" });
  });

  it("coalesces while a write is in flight: only the latest status follows, on the pod it wrote", async () => {
    const { w, pods } = writer(0);
    const g = gate();
    pods.gate = g.promise;
    w.set(pod("5"), running("10.0.0.1"));
    await waitFor(() => pods.writes.length === 1, { message: "first write in flight" });
    for (let i = 2; i <= 9; i++) w.set(pod("5"), running(`10.0.0.${i}`)); // the informer still has rv 5
    pods.gate = undefined;
    g.open();
    await waitFor(() => w.pendingCount === 0 && pods.writes.length === 2, { message: "two writes" });
    assert.equal(pods.writes[1]?.status?.podIp, "10.0.0.9");
    assert.equal(pods.writes[1]?.metadata?.resourceVersion, "6", "based on its own write, not the informer's stale copy");
    assert.equal(pods.stored.status?.podIp, "10.0.0.9");
  });

  it("writes nothing for a status the api already holds", async () => {
    const { w, pods } = writer(0);
    w.set(pod("5", running()), running());
    await new Promise((r) => setImmediate(r));
    assert.equal(pods.writes.length, 0);
    assert.equal(w.pendingCount, 0);
  });

  it("drops a conflicting write and writes again when asked on the newer pod", async () => {
    const { w, pods } = writer(0);
    const newer = pods.touch();
    w.set(pod("5"), running());
    await waitFor(() => w.pendingCount === 0 && pods.writes.length === 1, { message: "conflict" });
    assert.equal(pods.stored.status?.phase, "Pending");
    w.set(newer, running());
    await waitFor(() => pods.stored.status?.phase === "Running", { message: "written on the newer pod" });
  });

  it("retries after another error", async () => {
    const { w, pods } = writer(0);
    pods.failNext.push(internal("boom"));
    w.set(pod("5"), running());
    await waitFor(() => pods.stored.status?.phase === "Running", { message: "written on retry", timeoutMs: 10_000 });
    assert.equal(pods.writes.length, 2);
  });

  it("keeps its own write as the base until told the informer holds it (caughtUp), then forgets the pod", async () => {
    const { w, pods } = writer(0);
    w.set(pod("5"), running());
    await waitFor(() => (w.pendingCount === 0 && pods.writes.length === 1) || undefined, { message: "written" });
    assert.equal(w.size, 1, "its write is newer than the informer's pod: kept as the base");
    w.caughtUp(pod("5", running()));
    assert.equal(w.size, 1, "an older pod is not its write");
    w.caughtUp(structuredClone(pods.stored));
    assert.equal(w.size, 0);
    // A later status of that pod is written on the informer's copy, as any.
    w.set(structuredClone(pods.stored), running("10.0.0.2"));
    await waitFor(() => pods.writes.length === 2 || undefined, { message: "written again" });
    assert.equal(pods.stored.status?.podIp, "10.0.0.2");
  });

  it("a write refused with a conflict calls onConflict with its pod (the agent reconciles it again: the newer pod may be its own write, which it does not reconcile)", async () => {
    const pods = new FakePods();
    const conflicts: Pod[] = [];
    const client = { typed: () => pods } as unknown as Pick<ApiClient, "typed">;
    const w = new PodStatusWriter({ client, log: silentLogger(), holdMs: 0, onConflict: (p) => conflicts.push(p) });
    pods.touch(); // the api's pod is at 6; the status below was computed on 5
    w.set(pod("5"), running());
    await waitFor(() => (w.pendingCount === 0 && pods.writes.length === 1) || undefined, { message: "tried" });
    assert.equal(conflicts.length, 1);
    assert.equal(conflicts[0]?.metadata?.resourceVersion, "5");
    assert.equal(pods.stored.status?.phase, "Pending", "nothing written");
    assert.equal(w.size, 0, "dropped");
  });

  it("reads the hold window from CHOREO_STATUS_HOLD_MS", () => {
    assert.equal(statusHoldMsFromEnv({ CHOREO_STATUS_HOLD_MS: "0" }), 0);
    assert.equal(statusHoldMsFromEnv({ CHOREO_STATUS_HOLD_MS: "500" }), 500);
    assert.equal(statusHoldMsFromEnv({}), 200);
    assert.equal(statusHoldMsFromEnv({ CHOREO_STATUS_HOLD_MS: "x" }), 200);
    assert.ok(isIntermediate(creating));
    assert.ok(!isIntermediate(running()));
  });
});
