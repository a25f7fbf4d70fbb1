import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { isNotFound, type ApiError } from "@choreo/kit";
import type { Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import { DeleteOptions } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { PodDisruptionBudget } from "@choreo/kit/gen/choreo/policy/v1/policy";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { rejects } from "../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";
import type { GenericStore } from "../generic/store.js";

const pdb = (name: string, spec: Record<string, unknown>) =>
  fromKubeJson({ apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name, namespace: "default" }, spec });

const pod = (name: string, labels: Record<string, string>) =>
  fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "default", labels }, spec: { containers: [{ name: "c", image: "busybox" }] } });

function pdbOf(o: ApiObject): PodDisruptionBudget {
  if (o.kind?.$case !== "podDisruptionBudget") throw new Error(`not a PodDisruptionBudget: ${o.kind?.$case}`);
  return o.kind.value;
}

describe("poddisruptionbudgets", () => {
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  async function stored(resource: string, name: string): Promise<boolean> {
    try {
      await s.client.get(resource, "default", name);
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /** A running pod, ready or not. */
  async function runningPod(name: string, labels: Record<string, string>, ready: boolean): Promise<void> {
    const created = toKubeJson(await s.client.create(pod(name, labels)));
    const status = { phase: "Running", conditions: [{ type: "Ready", status: ready ? "True" : "False" }] };
    await s.client.updateStatus(fromKubeJson({ ...created, status }));
  }

  /** Writes the status the disruption controller would. */
  async function setStatus(name: string, status: Record<string, unknown>): Promise<void> {
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

  it("refuses minAvailable with maxUnavailable (422 on spec), stores nothing", async () => {
    const err = await rejects(s.client.create(pdb("both", { minAvailable: 1, maxUnavailable: 1, selector: {} })), 422, "Invalid");
    assert.deepEqual(
      err.status.details?.causes.map((c) => c.field),
      ["spec"],
    );
    assert.match(err.message, /minAvailable and maxUnavailable cannot be both set/);
    assert.equal(await stored("poddisruptionbudgets", "both"), false);
  });

  it("validates the values, the selector and the unhealthy pod eviction policy", async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ minAvailable: -1 }, "spec.minAvailable", /must be greater than or equal to 0/],
      [{ minAvailable: "5" }, "spec.minAvailable", /a valid percent string/],
      [{ maxUnavailable: "101%" }, "spec.maxUnavailable", /must not be greater than 100%/],
      [
        { minAvailable: 1, selector: { matchExpressions: [{ key: "a", operator: "Bogus" }] } },
        "spec.selector.matchExpressions[0].operator",
        /not a valid selector operator/,
      ],
      [{ minAvailable: 1, unhealthyPodEvictionPolicy: "Never" }, "spec.unhealthyPodEvictionPolicy", /supported values: "AlwaysAllow", "IfHealthyBudget"/],
    ];
    for (const [spec, field, message] of cases) {
      const err: ApiError = await rejects(s.client.create(pdb("bad", spec)), 422, "Invalid", message);
      assert.ok(
        err.status.details?.causes.some((c) => c.field === field),
        `${JSON.stringify(spec)}: ${err.message}`,
      );
      assert.equal(await stored("poddisruptionbudgets", "bad"), false);
    }
  });

  it("drops a status given on create; a spec change is a new generation", async () => {
    const created = toKubeJson(
      await s.client.create(
        fromKubeJson({ ...toKubeJson(pdb("gen", { minAvailable: "50%", selector: { matchLabels: { app: "g" } } })), status: { disruptionsAllowed: 5 } }),
      ),
    );
    assert.equal((created["status"] as Record<string, unknown>)["disruptionsAllowed"], 0);
    assert.equal((created["metadata"] as { generation: number }).generation, 1);
    const updated = toKubeJson(await s.client.update(fromKubeJson({ ...created, spec: { minAvailable: 2, selector: { matchLabels: { app: "g" } } } })));
    assert.equal((updated["metadata"] as { generation: number }).generation, 2);
  });

  it("evicts within the budget: decrements disruptionsAllowed, records the pod, deletes it; then 429", async () => {
    await s.client.create(pdb("web", { minAvailable: 2, selector: { matchLabels: { app: "web" } } }));
    for (const n of ["web-1", "web-2", "web-3"]) await runningPod(n, { app: "web" }, true);
    await setStatus("web", { disruptionsAllowed: 1, currentHealthy: 3, desiredHealthy: 2, expectedPods: 3 });
    await evict("web-1");
    assert.equal(await stored("pods", "web-1"), false);
    const after = pdbOf(await s.client.get("poddisruptionbudgets", "default", "web")).status!;
    assert.equal(after.disruptionsAllowed, 0);
    assert.ok(after.disruptedPods["web-1"], "the evicted pod is recorded in disruptedPods");
    assert.equal(after.conditions.find((c) => c.type === "DisruptionAllowed")?.reason, "InsufficientPods");
    const err = await rejects(evict("web-2"), 429, "TooManyRequests", /^Cannot evict pod as it would violate the pod's disruption budget\.$/);
    assert.deepEqual(
      err.status.details?.causes.map((c) => c.reason),
      ["DisruptionBudget"],
    );
    assert.match(err.status.details?.causes[0]?.message ?? "", /The disruption budget web needs 2 healthy pods and has 3 currently/);
    assert.equal(await stored("pods", "web-2"), true);
  });

  it("concurrent evictions spend one disruption once: one goes, the others are 429", async () => {
    await s.client.create(pdb("race", { maxUnavailable: 1, selector: { matchLabels: { app: "race" } } }));
    const names = ["race-1", "race-2", "race-3", "race-4"];
    for (const n of names) await runningPod(n, { app: "race" }, true);
    await setStatus("race", { disruptionsAllowed: 1, currentHealthy: 4, desiredHealthy: 3, expectedPods: 4 });
    const results = await Promise.allSettled(names.map((n) => evict(n)));
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1, JSON.stringify(results.map((r) => r.status)));
    for (const r of results) if (r.status === "rejected") assert.equal((r.reason as ApiError).code, 429);
    const after = pdbOf(await s.client.get("poddisruptionbudgets", "default", "race")).status!;
    assert.equal(after.disruptionsAllowed, 0);
    assert.equal(Object.keys(after.disruptedPods).length, 1);
  });

  it("a budget written meanwhile (another eviction) is read again: spent from the new status, or refused", async () => {
    await s.client.create(pdb("retry", { maxUnavailable: 2, selector: { matchLabels: { app: "retry" } } }));
    for (const n of ["retry-1", "retry-2"]) await runningPod(n, { app: "retry" }, true);
    const store = s.registry.store;
    /**
     * Before the eviction's status write, another one lands: disruptionsAllowed → `left`, "elsewhere" recorded.
     * Called on the request's view of the store (its `this`), then the class's own replace is back.
     */
    const interleave = (left: number): void => {
      store.replace = async function (this: GenericStore, ...args: Parameters<GenericStore["replace"]>) {
        Reflect.deleteProperty(store, "replace");
        const cur = toKubeJson(await s.client.get("poddisruptionbudgets", "default", "retry"));
        const status = cur["status"] as Record<string, unknown>;
        const disruptedPods = { ...(status["disruptedPods"] as Record<string, string>), elsewhere: "2026-11-26T01:00:00Z" };
        await s.client.updateStatus(fromKubeJson({ ...cur, status: { ...status, disruptionsAllowed: left, disruptedPods } }));
        return this.replace(...args);
      };
    };
    await setStatus("retry", { disruptionsAllowed: 2, currentHealthy: 2, desiredHealthy: 0, expectedPods: 2 });
    interleave(1);
    await evict("retry-1");
    const after = pdbOf(await s.client.get("poddisruptionbudgets", "default", "retry")).status!;
    assert.equal(after.disruptionsAllowed, 0);
    assert.deepEqual(Object.keys(after.disruptedPods).sort(), ["elsewhere", "retry-1"]);
    assert.equal(await stored("pods", "retry-1"), false);
    await setStatus("retry", { disruptionsAllowed: 1, currentHealthy: 1, desiredHealthy: 0, expectedPods: 2 });
    interleave(0);
    await rejects(evict("retry-2"), 429, "TooManyRequests");
    assert.equal(await stored("pods", "retry-2"), true);
  });

  it("refuses while the budget's status trails its generation (429)", async () => {
    await s.client.create(pdb("stale", { maxUnavailable: 1, selector: { matchLabels: { app: "stale" } } }));
    await runningPod("stale-1", { app: "stale" }, true);
    const err = await rejects(evict("stale-1"), 429, "TooManyRequests");
    assert.match(err.status.details?.causes[0]?.message ?? "", /still being processed/);
    assert.equal(await stored("pods", "stale-1"), true);
  });

  it("evicts pending pods and, with AlwaysAllow, not-ready pods without spending the budget", async () => {
    await s.client.create(pdb("loose", { minAvailable: 5, selector: { matchLabels: { app: "loose" } }, unhealthyPodEvictionPolicy: "AlwaysAllow" }));
    await setStatus("loose", { disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 5, expectedPods: 3 });
    await s.client.create(pod("loose-pending", { app: "loose" }));
    await runningPod("loose-unready", { app: "loose" }, false);
    await runningPod("loose-ready", { app: "loose" }, true);
    await evict("loose-pending");
    await evict("loose-unready");
    assert.equal(await stored("pods", "loose-pending"), false);
    assert.equal(await stored("pods", "loose-unready"), false);
    await rejects(evict("loose-ready"), 429, "TooManyRequests");
    assert.equal(pdbOf(await s.client.get("poddisruptionbudgets", "default", "loose")).status?.disruptionsAllowed, 0);
  });

  it("IfHealthyBudget: a not-ready pod goes for free while the budget is met, spends when it is not", async () => {
    await s.client.create(pdb("met", { minAvailable: 1, selector: { matchLabels: { app: "met" } } }));
    await runningPod("met-ready", { app: "met" }, true);
    await runningPod("met-unready-1", { app: "met" }, false);
    await runningPod("met-unready-2", { app: "met" }, false);
    await setStatus("met", { disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1, expectedPods: 3 });
    await evict("met-unready-1");
    assert.equal(await stored("pods", "met-unready-1"), false);
    // Below the budget (a healthy pod missing), a not-ready pod needs a disruption like any other.
    await setStatus("met", { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 1, expectedPods: 3 });
    await rejects(evict("met-unready-2"), 429, "TooManyRequests");
    assert.equal(await stored("pods", "met-unready-2"), true);
  });

  it("a pod under two budgets → 500; a missing pod → 404; dryRun changes nothing", async () => {
    for (const n of ["two-a", "two-b"]) await s.client.create(pdb(n, { maxUnavailable: 1, selector: { matchLabels: { app: "two" } } }));
    await runningPod("two-1", { app: "two" }, true);
    await rejects(evict("two-1"), 500, "InternalError", /This pod has more than one PodDisruptionBudget, which the eviction subresource does not support\./);
    await rejects(evict("nobody"), 404, "NotFound");
    await s.client.create(pdb("dry", { maxUnavailable: 1, selector: { matchLabels: { app: "dry" } } }));
    await runningPod("dry-1", { app: "dry" }, true);
    await setStatus("dry", { disruptionsAllowed: 1, currentHealthy: 1, desiredHealthy: 0, expectedPods: 1 });
    await evict("dry-1", { dryRun: ["All"] });
    assert.equal(await stored("pods", "dry-1"), true);
    assert.equal(pdbOf(await s.client.get("poddisruptionbudgets", "default", "dry")).status?.disruptionsAllowed, 1);
  });
});
