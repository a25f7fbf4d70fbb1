import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { alreadyExists, conflict, keyOf, unwrap } from "@choreo/kit";
import type { Deployment, ReplicaSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { FakeCache, RecordingClient } from "../testing.js";
import { DeploymentController } from "./deployment-controller.js";
import { HASH_LABEL, REVISION, podTemplateHash } from "./util.js";
import { podCacheTransform } from "../pod-cache.js";

const template = { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "app", image: "nginx:1" }] } };

function deployment(): Deployment {
  return unwrap(
    fromKubeJson({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: "default", uid: "uid-d", generation: 1, resourceVersion: "10" },
      spec: { replicas: 2, selector: { matchLabels: { app: "web" } }, template },
    }),
  ) as Deployment;
}

function replicaSet(name: string, labels: Record<string, string>, owner?: string): ReplicaSet {
  return unwrap(
    fromKubeJson({
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: {
        name,
        namespace: "default",
        uid: `uid-${name}`,
        resourceVersion: "3",
        labels,
        ...(owner ? { ownerReferences: [{ apiVersion: "apps/v1", kind: "Deployment", name: "web", uid: owner, controller: true }] } : {}),
      },
      spec: { replicas: 1, selector: { matchLabels: labels }, template: { ...template, metadata: { labels } } },
    }),
  ) as ReplicaSet;
}

function setup(rss: ReplicaSet[]) {
  const deployments = new FakeCache<Deployment>();
  const replicasets = new FakeCache<ReplicaSet>();
  const client = new RecordingClient();
  const events: string[] = [];
  const c = new DeploymentController({
    client,
    deployments,
    replicasets,
    pods: new FakeCache<Pod>(podCacheTransform()),
    log: silentLogger(),
    recorder: { emit: (_r, _t, reason, msg) => events.push(`${reason} ${msg}`) },
  });
  const d = deployment();
  deployments.put(d);
  for (const rs of rss) replicasets.put(rs);
  client.objects.set("deployments/default/web", { kind: { $case: "deployment", value: d } });
  return { c, client, events, key: keyOf(d.metadata!) };
}

describe("DeploymentController.reconcile", () => {
  it("a new Deployment: creates its ReplicaSet, an Event, the revision annotation (on the Deployment's version), then the status", async () => {
    const { c, client, events, key } = setup([]);
    await c.reconcile(key);
    const rs = unwrap(client.of("create")[0]!.object) as ReplicaSet;
    assert.equal(rs.metadata?.name, `web-${podTemplateHash(deployment().spec?.template)}`);
    assert.deepEqual(events, [`ScalingReplicaSet Scaled up replica set ${rs.metadata?.name} from 0 to 2`]);
    const patch = client.of("patch")[0];
    assert.deepEqual([patch?.resource, patch?.patch], ["deployments", { metadata: { resourceVersion: "10", annotations: { [REVISION]: "1" } } }]);
    assert.equal(client.of("updateStatus").length, 1);
  });

  it("adopts a matching orphan ReplicaSet after a live read and releases its own that stopped matching", async () => {
    const hash = podTemplateHash(deployment().spec?.template);
    const orphan = replicaSet(`web-${hash}`, { app: "web", [HASH_LABEL]: hash });
    const strayed = replicaSet("web-old", { app: "debug" }, "uid-d");
    const { c, client, key } = setup([orphan, strayed]);
    await c.reconcile(key);
    assert.equal(client.of("get")[0]?.resource, "deployments");
    const owners = client
      .of("patch")
      .filter((p) => p.resource === "replicasets" && (p.patch as { metadata: { ownerReferences?: unknown } }).metadata.ownerReferences)
      .map((p) => [p.name, (p.patch as { metadata: { ownerReferences: { uid: string }[] } }).metadata.ownerReferences.map((r) => r.uid)]);
    assert.deepEqual(owners, [
      [orphan.metadata?.name, ["uid-d"]],
      ["web-old", []],
    ]);
    assert.equal(client.of("create").length, 0, "the adopted set is the new ReplicaSet: none created");
  });

  it("a name clash with another template raises collisionCount and retries", async () => {
    const { c, client, key } = setup([]);
    client.fail.create = alreadyExists("replicasets", "web-x");
    const clash = replicaSet(`web-${podTemplateHash(deployment().spec?.template)}`, { app: "web", other: "yes" }, "uid-other");
    client.objects.set(`replicasets/default/${clash.metadata!.name}`, { kind: { $case: "replicaSet", value: clash } });
    await assert.rejects(c.reconcile(key), /collisionCount 1/);
    const st = unwrap(client.of("updateStatus")[0]!.object) as Deployment;
    assert.equal(st.status?.collisionCount, 1);
  });

  it("a ReplicaSet patch that conflicts (a stale cache) stops the sync: no status written, the key retried", async () => {
    const hash = podTemplateHash(deployment().spec?.template);
    const mine = replicaSet(`web-${hash}`, { app: "web", [HASH_LABEL]: hash }, "uid-d");
    const { c, client, key } = setup([mine]);
    client.fail.patch = conflict("replicasets", mine.metadata!.name, "modified");
    await assert.rejects(c.reconcile(key), /changed; deployment default\/web syncs again/);
    assert.equal(client.of("updateStatus").length, 0);
  });
});
