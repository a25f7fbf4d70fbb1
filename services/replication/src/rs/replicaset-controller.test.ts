import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { keyOf, unwrap } from "@choreo/kit";
import type { ReplicaSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { FakeCache, RecordingClient, pod } from "../testing.js";
import { ReplicaSetManager, setSelector } from "./replicaset-controller.js";
import { podCacheTransform } from "../pod-cache.js";

function rs(replicas: number): ReplicaSet {
  return unwrap(
    fromKubeJson({
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: { name: "web", namespace: "default", uid: "uid-rs", generation: 2 },
      spec: {
        replicas,
        selector: { matchLabels: { app: "web" }, matchExpressions: [{ key: "tier", operator: "In", values: ["fe", "be"] }] },
        template: { metadata: { labels: { app: "web", tier: "fe" } }, spec: { containers: [{ name: "app", image: "nginx" }] } },
      },
    }),
  ) as ReplicaSet;
}

function setup(r: ReplicaSet, ps: Pod[]) {
  const replicasets = new FakeCache<ReplicaSet>();
  const pods = new FakeCache<Pod>(podCacheTransform());
  const client = new RecordingClient();
  const m = new ReplicaSetManager({ client, replicasets, pods, log: silentLogger() });
  replicasets.put(r);
  for (const p of ps) pods.put(p);
  client.objects.set("replicasets/default/web", { kind: { $case: "replicaSet", value: r } });
  return { m, client, key: keyOf(r.metadata!) };
}

describe("ReplicaSetManager", () => {
  it("setSelector: matchLabels and matchExpressions; an empty selector selects nothing", () => {
    const s = setSelector({ matchLabels: { app: "web" }, matchExpressions: [{ key: "tier", operator: "NotIn", values: ["db"] }] });
    assert.equal(s?.matches({ app: "web", tier: "fe" }), true);
    assert.equal(s?.matches({ app: "web", tier: "db" }), false);
    assert.equal(setSelector({ matchLabels: {}, matchExpressions: [] }), undefined);
  });

  it("adopts orphans its set-based selector matches, ignores the others, creates the rest owned by the ReplicaSet, writes apps/v1 status", async () => {
    const { m, client, key } = setup(rs(3), [pod("fe", { labels: { app: "web", tier: "fe" } }), pod("db", { labels: { app: "web", tier: "db" } })]);
    await m.reconcile(key);
    assert.deepEqual(
      client.of("patch").map((p) => p.name),
      ["fe"],
    );
    assert.equal(client.of("get")[0]?.resource, "replicasets", "re-reads the ReplicaSet before adopting");
    const creates = client.of("create").map((c) => unwrap(c.object) as Pod);
    assert.equal(creates.length, 2);
    assert.deepEqual(
      creates[0]?.metadata?.ownerReferences.map((r) => [r.apiVersion, r.kind, r.uid, r.controller]),
      [["apps/v1", "ReplicaSet", "uid-rs", true]],
    );
    assert.equal(creates[0]?.metadata?.labels["tier"], "fe");
    const st = client.of("updateStatus")[0]?.object;
    assert.equal(st?.kind?.$case, "replicaSet");
    const status = (unwrap(st!) as ReplicaSet).status;
    assert.deepEqual([status?.replicas, status?.observedGeneration], [1, 2]);
  });

  it("scales down by deleting its own pods only", async () => {
    const owner = { kind: "ReplicaSet", name: "web", uid: "uid-rs" };
    const labels = { app: "web", tier: "fe" };
    const { m, client, key } = setup(rs(1), [
      pod("a", { owner, labels, node: "n1" }),
      pod("b", { owner, labels, node: "n1", ready: false }),
      pod("c", { owner: { kind: "ReplicaSet", name: "x", uid: "uid-x" }, labels }),
    ]);
    await m.reconcile(key);
    assert.deepEqual(
      client.of("delete").map((d) => d.name),
      ["b"],
    );
  });
});
