import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { isNotFound } from "@choreo/kit";
import { WatchEvent, type Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Pod, PodCondition } from "@choreo/kit/gen/choreo/core/v1/core";
import { DeleteOptions } from "@choreo/kit/gen/choreo/meta/v1/meta";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { rejects } from "../../testing/api-assert.js";
import type { GenericStore } from "../generic/store.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";

// The DisruptionTarget condition the eviction subresource puts on a pod before
// deleting it (Kubernetes' addConditionAndDeletePod). The budget arithmetic
// itself is tested in poddisruptionbudgets/pdb.test.ts.

const pdb = (name: string, spec: Record<string, unknown>) =>
  fromKubeJson({ apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name, namespace: "default" }, spec });

function podOf(o: ApiObject): Pod {
  if (o.kind?.$case !== "pod") throw new Error(`not a Pod: ${o.kind?.$case}`);
  return o.kind.value;
}

const disruption = (p: Pod): PodCondition | undefined => p.status?.conditions.find((c) => c.type === "DisruptionTarget");

describe("eviction marks the pod DisruptionTarget", () => {
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  /** A pod; bound to a node and Running (ready or not) unless `pending`. */
  async function makePod(name: string, labels: Record<string, string>, o: { pending?: boolean; ready?: boolean } = {}): Promise<void> {
    const spec = { containers: [{ name: "c", image: "busybox" }], ...(o.pending ? {} : { nodeName: "node-1" }) };
    const created = toKubeJson(await s.client.create(fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "default", labels }, spec })));
    if (o.pending) return;
    const status = { phase: "Running", conditions: [{ type: "Ready", status: o.ready === false ? "False" : "True" }] };
    await s.client.updateStatus(fromKubeJson({ ...created, status }));
  }

  async function setBudgetStatus(name: string, status: Record<string, unknown>): Promise<void> {
    const cur = toKubeJson(await s.client.get("poddisruptionbudgets", "default", name));
    const generation = (cur["metadata"] as { generation: number }).generation;
    await s.client.updateStatus(fromKubeJson({ ...cur, status: { observedGeneration: generation, ...status } }));
  }

  function evict(name: string, options: Partial<DeleteOptions> = {}): Promise<ApiObject> {
    return s.registry.evict({
      namespace: "default",
      name,
      eviction: { apiVersion: "policy/v1", kind: "Eviction", metadata: undefined, deleteOptions: DeleteOptions.fromPartial(options) },
    });
  }

  async function get(name: string): Promise<Pod | undefined> {
    try {
      return podOf(await s.client.get("pods", "default", name));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** The watch events of the pod written from now on, as a watcher sees them. */
  function eventsFrom(name: string): () => { type: string; pod: Pod }[] {
    const start = s.storage.changes.length;
    return () =>
      s.storage.changes
        .slice(start)
        .map((c) => WatchEvent.decode(c.event))
        .filter((e) => e.object?.kind?.$case === "pod" && e.object.kind.value.metadata?.name === name)
        .map((e) => ({ type: e.type, pod: podOf(e.object!) }));
  }

  it("a running pod: the condition is written, then the graceful deletion; the terminating pod carries it", async () => {
    await makePod("run-1", { app: "run" });
    const events = eventsFrom("run-1");
    await evict("run-1");
    const pod = await get("run-1");
    assert.ok(pod?.metadata?.deletionTimestamp, "the pod is terminating (bound and running: graceful deletion)");
    const cond = disruption(pod);
    assert.deepEqual(
      { type: cond?.type, status: cond?.status, reason: cond?.reason, message: cond?.message },
      { type: "DisruptionTarget", status: "True", reason: "EvictionByEvictionAPI", message: "Eviction API: evicting" },
    );
    assert.match(cond?.lastTransitionTime ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(pod.status?.conditions.find((c) => c.type === "Ready")?.status, "True", "the other conditions are kept");
    const seen = events();
    assert.deepEqual(
      seen.map((e) => [e.type, Boolean(disruption(e.pod)), Boolean(e.pod.metadata?.deletionTimestamp)]),
      [
        ["MODIFIED", true, false],
        ["MODIFIED", true, true],
      ],
    );
  });

  it("a pod under a budget: the disruption is spent and the pod marked; a refused eviction marks nothing", async () => {
    await s.client.create(pdb("web", { minAvailable: 1, selector: { matchLabels: { app: "web" } } }));
    for (const n of ["web-1", "web-2"]) await makePod(n, { app: "web" });
    await setBudgetStatus("web", { disruptionsAllowed: 1, currentHealthy: 2, desiredHealthy: 1, expectedPods: 2 });
    await evict("web-1");
    assert.equal(disruption((await get("web-1"))!)?.reason, "EvictionByEvictionAPI");
    const events = eventsFrom("web-2");
    await rejects(evict("web-2"), 429, "TooManyRequests");
    assert.equal(disruption((await get("web-2"))!), undefined);
    assert.deepEqual(events(), [], "nothing written to the pod refused");
  });

  it("a pending pod: marked, then deleted at once (a watcher sees the condition before DELETED)", async () => {
    await makePod("pending-1", { app: "pending" }, { pending: true });
    const events = eventsFrom("pending-1");
    await evict("pending-1");
    assert.equal(await get("pending-1"), undefined);
    assert.deepEqual(
      events().map((e) => [e.type, disruption(e.pod)?.reason]),
      [
        ["MODIFIED", "EvictionByEvictionAPI"],
        ["DELETED", "EvictionByEvictionAPI"],
      ],
    );
  });

  it("evicting a pod already marked and terminating writes no second condition", async () => {
    await makePod("again-1", { app: "again" });
    await evict("again-1");
    const first = disruption((await get("again-1"))!);
    const events = eventsFrom("again-1");
    await evict("again-1");
    assert.deepEqual(disruption((await get("again-1"))!), first);
    assert.ok(
      events().every((e) => e.type !== "MODIFIED" || e.pod.status?.conditions.filter((c) => c.type === "DisruptionTarget").length === 1),
      "one DisruptionTarget condition",
    );
  });

  it("a dry run writes no condition", async () => {
    await makePod("dry-1", { app: "dry" });
    const events = eventsFrom("dry-1");
    await evict("dry-1", { dryRun: ["All"] });
    const pod = await get("dry-1");
    assert.equal(disruption(pod!), undefined);
    assert.equal(pod?.metadata?.deletionTimestamp, "");
    assert.deepEqual(events(), []);
  });

  it("a status written by another writer meanwhile is kept: the condition goes on the newer pod", async () => {
    await makePod("race-1", { app: "race" });
    const store = s.registry.store;
    // Before the eviction's condition write lands, the node agent reports a pod IP. Called on the request's view
    // of the store (its `this`); then the class's own replace is back.
    store.replace = async function (this: GenericStore, ...args: Parameters<GenericStore["replace"]>) {
      Reflect.deleteProperty(store, "replace");
      const cur = toKubeJson(await s.client.get("pods", "default", "race-1"));
      await s.client.updateStatus(fromKubeJson({ ...cur, status: { ...(cur["status"] as object), podIP: "10.244.1.9" } }));
      return this.replace(...args);
    };
    await evict("race-1");
    const pod = await get("race-1");
    assert.equal(pod?.status?.podIp, "10.244.1.9", "the other writer's status kept");
    assert.equal(disruption(pod!)?.reason, "EvictionByEvictionAPI");
    assert.ok(pod?.metadata?.deletionTimestamp);
  });

  it("a not-ready pod evicted for free that changes meanwhile: 429, neither marked nor deleted", async () => {
    await s.client.create(pdb("flap", { minAvailable: 1, selector: { matchLabels: { app: "flap" } } }));
    await makePod("flap-ready", { app: "flap" });
    await makePod("flap-1", { app: "flap" }, { ready: false });
    await setBudgetStatus("flap", { disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1, expectedPods: 2 });
    const store = s.registry.store;
    // After the eviction read the pod (not ready) and while it looks for budgets, the pod becomes ready.
    store.page = async function (this: GenericStore, ...args: Parameters<GenericStore["page"]>) {
      Reflect.deleteProperty(store, "page");
      const cur = toKubeJson(await s.client.get("pods", "default", "flap-1"));
      await s.client.updateStatus(fromKubeJson({ ...cur, status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] } }));
      return this.page(...args);
    };
    const err = await rejects(evict("flap-1"), 429, "TooManyRequests");
    assert.match(err.status.details?.causes[0]?.message ?? "", /The disruption budget flap is still being processed by the server\./);
    const pod = await get("flap-1");
    assert.equal(disruption(pod!), undefined);
    assert.equal(pod?.metadata?.deletionTimestamp, "");
  });

  it("a UID precondition naming another pod: 409, the pod neither marked nor deleted", async () => {
    await makePod("uid-1", { app: "uid" });
    await rejects(evict("uid-1", { preconditions: { uid: "not-this-one", resourceVersion: "" } }), 409, "Conflict");
    const pod = await get("uid-1");
    assert.equal(disruption(pod!), undefined);
    assert.equal(pod?.metadata?.deletionTimestamp, "");
  });
});
