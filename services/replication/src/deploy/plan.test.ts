import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import type { Deployment, ReplicaSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { pod } from "../testing.js";
import { planDeployment, type DeploymentPlan } from "./plan.js";
import { Reason, rfc3339 } from "./progress.js";
import { CHANGE_CAUSE, DESIRED_REPLICAS, HASH_LABEL, MAX_REPLICAS, REVISION, REVISION_HISTORY, maxSurge, maxUnavailable, podTemplateHash } from "./util.js";

const NOW = Date.parse("2026-01-01T12:00:00Z");

interface DInit {
  replicas?: number;
  image?: string;
  strategy?: unknown;
  annotations?: Record<string, string>;
  paused?: boolean;
  revisionHistoryLimit?: number;
  progressDeadlineSeconds?: number;
  status?: unknown;
  generation?: number;
}

function deployment(o: DInit = {}): Deployment {
  return unwrap(
    fromKubeJson({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: "default", uid: "uid-d", generation: o.generation ?? 1, resourceVersion: "10", annotations: o.annotations ?? {} },
      spec: {
        replicas: o.replicas ?? 3,
        selector: { matchLabels: { app: "web" } },
        template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "app", image: o.image ?? "nginx:1" }] } },
        strategy: o.strategy ?? { type: "RollingUpdate", rollingUpdate: { maxSurge: "25%", maxUnavailable: "25%" } },
        revisionHistoryLimit: o.revisionHistoryLimit ?? 10,
        progressDeadlineSeconds: o.progressDeadlineSeconds ?? 600,
        paused: o.paused ?? false,
      },
      ...(o.status ? { status: o.status } : {}),
    }),
  ) as Deployment;
}

interface RsInit {
  image: string;
  replicas: number;
  available?: number;
  actual?: number;
  revision?: number;
  created: string;
  annotations?: Record<string, string>;
}

/** A ReplicaSet the Deployment made earlier for the template with `image`. */
function rs(d: Deployment, o: RsInit): ReplicaSet {
  const hash = podTemplateHash(deployment({ image: o.image }).spec?.template);
  const labels = { app: "web", [HASH_LABEL]: hash };
  return unwrap(
    fromKubeJson({
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: {
        name: `web-${hash}`,
        namespace: "default",
        uid: `uid-${o.image}`,
        resourceVersion: "5",
        generation: 1,
        creationTimestamp: o.created,
        labels,
        annotations: {
          [REVISION]: String(o.revision ?? 1),
          [DESIRED_REPLICAS]: String(d.spec!.replicas),
          [MAX_REPLICAS]: String(d.spec!.replicas! + maxSurge(d)),
          ...o.annotations,
        },
        ownerReferences: [{ apiVersion: "apps/v1", kind: "Deployment", name: "web", uid: "uid-d", controller: true, blockOwnerDeletion: true }],
      },
      spec: {
        replicas: o.replicas,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: "app", image: o.image }] } },
      },
      status: {
        replicas: o.actual ?? o.replicas,
        readyReplicas: o.available ?? o.replicas,
        availableReplicas: o.available ?? o.replicas,
        observedGeneration: 1,
      },
    }),
  ) as ReplicaSet;
}

const sizes = (p: DeploymentPlan): Record<string, number> =>
  Object.fromEntries(p.patches.filter((x) => x.replicas !== undefined).map((x) => [x.rs.spec?.template?.spec?.containers[0]?.image ?? "", x.replicas!]));
const cond = (p: DeploymentPlan, type: string) => p.status.conditions.find((c) => c.type === type);

describe("fenceposts", () => {
  const rolling = (surge: unknown, unavailable: unknown, replicas: number) =>
    deployment({ replicas, strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: surge, maxUnavailable: unavailable } } });
  it("percentages: surge rounds up, unavailable rounds down", () => {
    assert.deepEqual([maxSurge(rolling("25%", "25%", 10)), maxUnavailable(rolling("25%", "25%", 10))], [3, 2]);
    assert.deepEqual([maxSurge(rolling("25%", "25%", 3)), maxUnavailable(rolling("25%", "25%", 3))], [1, 0]);
    assert.deepEqual([maxSurge(rolling("50%", "50%", 5)), maxUnavailable(rolling("50%", "50%", 5))], [3, 2]);
  });
  it("numbers as given; both zero makes unavailable 1; unavailable at most replicas; Recreate has neither", () => {
    assert.deepEqual([maxSurge(rolling(2, 1, 4)), maxUnavailable(rolling(2, 1, 4))], [2, 1]);
    assert.deepEqual([maxSurge(rolling("0%", "0%", 4)), maxUnavailable(rolling("0%", "0%", 4))], [0, 1]);
    assert.equal(maxUnavailable(rolling(0, 10, 4)), 4);
    const re = deployment({ strategy: { type: "Recreate" } });
    assert.deepEqual([maxSurge(re), maxUnavailable(re)], [0, 0]);
  });
});

describe("planDeployment: a new Deployment", () => {
  it("creates <name>-<hash> with the hash in its selector and template labels, revision 1, the replicas annotations and change-cause", () => {
    const d = deployment({ annotations: { [CHANGE_CAUSE]: "first", "kubectl.kubernetes.io/last-applied-configuration": "{}" } });
    const p = planDeployment(d, [], [], NOW);
    const c = p.create!;
    const hash = podTemplateHash(d.spec?.template);
    assert.equal(c.metadata?.name, `web-${hash}`);
    assert.equal(c.spec?.replicas, 3, "all at once: nothing old to replace");
    assert.deepEqual(c.spec?.selector?.matchLabels, { app: "web", [HASH_LABEL]: hash });
    assert.deepEqual(c.spec?.template?.metadata?.labels, { app: "web", [HASH_LABEL]: hash });
    assert.equal(c.metadata?.labels[HASH_LABEL], hash);
    assert.deepEqual(c.metadata?.annotations, { [CHANGE_CAUSE]: "first", [REVISION]: "1", [DESIRED_REPLICAS]: "3", [MAX_REPLICAS]: "4" });
    assert.deepEqual(
      c.metadata?.ownerReferences.map((r) => [r.kind, r.uid, r.controller]),
      [["Deployment", "uid-d", true]],
    );
    assert.equal(p.createEvent, `Scaled up replica set web-${hash} from 0 to 3`);
    assert.deepEqual(p.annotations, { [REVISION]: "1" });
    assert.equal(cond(p, "Progressing")?.reason, Reason.NewReplicaSetCreated);
    assert.equal(p.status.observedGeneration, 1);
  });
  it("a collision count changes the hash", () => {
    const d = deployment();
    assert.notEqual(podTemplateHash(d.spec?.template), podTemplateHash(d.spec?.template, 1));
    assert.match(podTemplateHash(d.spec?.template), /^[bcdfghjklmnpqrstvwxz2456789]{1,10}$/);
  });
});

describe("planDeployment: RollingUpdate", () => {
  const stable = { replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3, observedGeneration: 1 };
  it("a new template: the new set starts at the surge room (1 of 3 at 25%), the old keep all (maxUnavailable 0)", () => {
    const d = deployment({ image: "nginx:2", generation: 2, status: stable });
    const old = rs(d, { image: "nginx:1", replicas: 3, created: "2026-01-01T00:00:00Z" });
    const p = planDeployment(d, [old], [], NOW);
    assert.equal(p.create?.spec?.replicas, 1);
    assert.equal(p.create?.metadata?.annotations[REVISION], "2");
    assert.deepEqual(p.annotations, { [REVISION]: "2" });
    assert.equal(p.patches.filter((x) => x.replicas !== undefined).length, 0);
  });
  it("then old pods go as new ones become available, never below replicas − maxUnavailable available", () => {
    const d = deployment({ image: "nginx:2", generation: 2, status: stable });
    const old = rs(d, { image: "nginx:1", replicas: 3, created: "2026-01-01T00:00:00Z" });
    const fresh = rs(d, { image: "nginx:2", replicas: 1, available: 0, revision: 2, created: "2026-01-01T11:00:00Z" });
    assert.deepEqual(sizes(planDeployment(d, [old, fresh], [], NOW)), {}, "the new pod is not available yet: nothing may go");
    fresh.status!.availableReplicas = 1;
    const p = planDeployment(d, [old, fresh], [], NOW);
    assert.deepEqual(sizes(p), { "nginx:1": 2 });
    assert.deepEqual(p.patches[0]?.events, [`Scaled down replica set ${old.metadata!.name} from 3 to 2`]);
    assert.equal(p.patches[0]?.rs.metadata?.resourceVersion, "5", "made on the version the plan saw");
    // The old set at 2, the new can grow to 2 (total 4 = 3 + surge 1).
    old.spec!.replicas = 2;
    assert.deepEqual(sizes(planDeployment(d, [old, fresh], [], NOW)), { "nginx:2": 2 });
  });
  it("an old set already scaled down whose status still counts its doomed pods lends no budget (a restarted controller reads a stale status)", () => {
    // 20 replicas, maxUnavailable 25 % → at least 15 available. The old set was scaled 20 → 15 by a controller
    // killed before the set's status caught up (it still says 20 available); 5 new pods, none available yet.
    const d = deployment({ replicas: 20, image: "nginx:2", generation: 2, status: { ...stable, replicas: 20, updatedReplicas: 0, availableReplicas: 20 } });
    const old = rs(d, { image: "nginx:1", replicas: 15, actual: 20, available: 20, created: "2026-01-01T00:00:00Z" });
    const fresh = rs(d, { image: "nginx:2", replicas: 5, available: 0, revision: 2, created: "2026-01-01T11:00:00Z" });
    assert.equal(sizes(planDeployment(d, [old, fresh], [], NOW))["nginx:1"], undefined, "15 is all the old set may count on: none of it goes");
    fresh.status!.availableReplicas = 2;
    fresh.spec!.replicas = 10;
    assert.equal(sizes(planDeployment(d, [old, fresh], [], NOW))["nginx:1"], 13, "two new pods available: two old may go");
  });
  it("percent fenceposts on 10 replicas: new set 3 (surge 3), old set down to 8 at once (unavailable 2)", () => {
    const d = deployment({ replicas: 10, image: "nginx:2", generation: 2, status: { ...stable, replicas: 10, updatedReplicas: 10, availableReplicas: 10 } });
    const old = rs(d, { image: "nginx:1", replicas: 10, created: "2026-01-01T00:00:00Z" });
    const p = planDeployment(d, [old], [], NOW);
    assert.equal(p.create?.spec?.replicas, 3);
    assert.deepEqual(sizes(p), { "nginx:1": 8 });
  });
  it("an old set's unavailable pods go first, without waiting for the new set", () => {
    const d = deployment({
      replicas: 4,
      image: "nginx:2",
      generation: 2,
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 1 } },
    });
    const old = rs(d, { image: "nginx:1", replicas: 4, available: 1, created: "2026-01-01T00:00:00Z" });
    const fresh = rs(d, { image: "nginx:2", replicas: 1, available: 0, revision: 2, created: "2026-01-01T11:00:00Z" });
    // total 5, minAvailable 3, new unavailable 1 → may scale down 1: an unhealthy old pod.
    assert.deepEqual(sizes(planDeployment(d, [old, fresh], [], NOW)), { "nginx:1": 3 });
  });
  it("complete: Progressing NewReplicaSetAvailable, Available True, status counts", () => {
    const d = deployment({ image: "nginx:2", generation: 2, status: { ...stable, observedGeneration: 2 } });
    const old = rs(d, { image: "nginx:1", replicas: 0, created: "2026-01-01T00:00:00Z" });
    const fresh = rs(d, { image: "nginx:2", replicas: 3, revision: 2, created: "2026-01-01T11:00:00Z" });
    const p = planDeployment(d, [old, fresh], [], NOW);
    assert.equal(cond(p, "Progressing")?.reason, Reason.NewReplicaSetAvailable);
    assert.equal(cond(p, "Progressing")?.message, `ReplicaSet "${fresh.metadata!.name}" has successfully progressed.`);
    assert.deepEqual([cond(p, "Available")?.status, cond(p, "Available")?.reason], ["True", Reason.MinimumReplicasAvailable]);
    const s = p.status;
    assert.deepEqual([s.replicas, s.updatedReplicas, s.readyReplicas, s.availableReplicas, s.unavailableReplicas, s.observedGeneration], [3, 3, 3, 3, 0, 2]);
  });
});

describe("planDeployment: progress deadline", () => {
  const progressing = (updated: string) => ({
    replicas: 4,
    updatedReplicas: 1,
    readyReplicas: 3,
    availableReplicas: 3,
    observedGeneration: 2,
    conditions: [{ type: "Progressing", status: "True", reason: "ReplicaSetUpdated", message: "x", lastUpdateTime: updated, lastTransitionTime: updated }],
  });
  const stuck = (updated: string) => {
    const d = deployment({ image: "nginx:2", generation: 2, progressDeadlineSeconds: 10, status: progressing(updated) });
    const old = rs(d, { image: "nginx:1", replicas: 3, created: "2026-01-01T00:00:00Z" });
    const fresh = rs(d, { image: "nginx:2", replicas: 1, available: 0, revision: 2, created: "2026-01-01T11:00:00Z" });
    return planDeployment(d, [old, fresh], [], NOW);
  };
  it("no progress for longer than progressDeadlineSeconds: Progressing False ProgressDeadlineExceeded, old pods untouched", () => {
    const p = stuck(rfc3339(NOW - 11_000));
    assert.deepEqual([cond(p, "Progressing")?.status, cond(p, "Progressing")?.reason], ["False", Reason.ProgressDeadlineExceeded]);
    assert.equal(p.patches.length, 0);
    assert.equal(p.recheckInMs, undefined);
  });
  it("within the deadline: unchanged, and a look again when it would pass", () => {
    const p = stuck(rfc3339(NOW - 4_000));
    assert.equal(cond(p, "Progressing")?.reason, "ReplicaSetUpdated");
    assert.equal(p.recheckInMs, 7_000);
  });
});

describe("planDeployment: Recreate", () => {
  const recreate = { type: "Recreate" };
  it("scales the old set to 0 first, waits for its pods to go, then creates the new one at full size", () => {
    const d = deployment({ image: "nginx:2", generation: 2, strategy: recreate });
    const old = rs(d, { image: "nginx:1", replicas: 3, created: "2026-01-01T00:00:00Z" });
    let p = planDeployment(d, [old], [], NOW);
    assert.deepEqual(sizes(p), { "nginx:1": 0 });
    assert.equal(p.create, undefined);
    old.spec!.replicas = 0;
    old.status!.replicas = 0;
    const leftover = pod("old-1", { owner: { kind: "ReplicaSet", name: old.metadata!.name, uid: old.metadata!.uid } });
    p = planDeployment(d, [old], [leftover], NOW);
    assert.equal(p.create, undefined, "an old pod is still running");
    p = planDeployment(d, [old], [pod("old-1", { owner: { kind: "ReplicaSet", name: old.metadata!.name, uid: old.metadata!.uid }, phase: "Succeeded" })], NOW);
    assert.equal(p.create?.spec?.replicas, 3);
  });
});

describe("planDeployment: proportional scaling", () => {
  it("replicas changed mid-rollout: the change spread by size over the active sets (Kubernetes' 10→15 example)", () => {
    // 10 replicas, maxSurge 3: old 8 and new 5 (13 = 10 + 3); scaled to 15 → 18 allowed, 5 to add: old +3, new +2.
    const strategy = { type: "RollingUpdate", rollingUpdate: { maxSurge: 3, maxUnavailable: 2 } };
    const before = deployment({ replicas: 10, strategy });
    const old = rs(before, { image: "nginx:1", replicas: 8, created: "2026-01-01T00:00:00Z" });
    const fresh = rs(before, { image: "nginx:2", replicas: 5, available: 0, revision: 2, created: "2026-01-01T11:00:00Z" });
    const d = deployment({ replicas: 15, image: "nginx:2", generation: 3, strategy, status: { replicas: 13 } });
    const p = planDeployment(d, [old, fresh], [], NOW);
    assert.deepEqual(sizes(p), { "nginx:1": 11, "nginx:2": 7 });
    assert.equal(p.patches[0]?.annotations[DESIRED_REPLICAS], "15");
    assert.equal(p.patches[0]?.annotations[MAX_REPLICAS], "18");
    assert.equal(p.create, undefined, "a scaling event starts no rollout step");
  });
  it("one active set takes the whole size", () => {
    const d = deployment({ replicas: 5, status: { replicas: 3 } });
    const only = rs(deployment(), { image: "nginx:1", replicas: 3, created: "2026-01-01T00:00:00Z" });
    const p = planDeployment(d, [only], [], NOW);
    assert.deepEqual(sizes(p), { "nginx:1": 5 });
    assert.deepEqual(p.patches[0]?.events, [`Scaled up replica set ${only.metadata!.name} from 3 to 5`]);
  });
});

describe("planDeployment: revisions and history", () => {
  it("rollout undo: the old set is the new one again, with revision max + 1 and its old revision in revision-history", () => {
    const d = deployment({ image: "nginx:1", generation: 3, annotations: { [REVISION]: "2", [CHANGE_CAUSE]: "undo" } });
    const first = rs(d, { image: "nginx:1", replicas: 0, revision: 1, created: "2026-01-01T00:00:00Z" });
    const second = rs(d, { image: "nginx:2", replicas: 3, revision: 2, created: "2026-01-01T11:00:00Z" });
    const p = planDeployment(d, [first, second], [], NOW);
    const patch = p.patches.find((x) => x.rs.metadata?.name === first.metadata?.name);
    assert.equal(patch?.annotations[REVISION], "3");
    assert.equal(patch?.annotations[REVISION_HISTORY], "1");
    assert.equal(patch?.annotations[CHANGE_CAUSE], "undo");
    assert.deepEqual(p.annotations, { [REVISION]: "3" });
    assert.equal(p.create, undefined);
  });
  it("revisionHistoryLimit: old sets with no pods beyond the limit are deleted, lowest revision first, once complete", () => {
    const status = { replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3, observedGeneration: 4 };
    const d = deployment({ image: "nginx:4", generation: 4, revisionHistoryLimit: 1, status });
    const sets = [1, 2, 3].map((i) => rs(d, { image: `nginx:${i}`, replicas: 0, revision: i, created: `2026-01-0${i}T00:00:00Z` }));
    const current = rs(d, { image: "nginx:4", replicas: 3, revision: 4, created: "2026-01-04T00:00:00Z" });
    const p = planDeployment(d, [...sets, current], [], NOW);
    assert.deepEqual(
      p.deletes.map((x) => x.spec?.template?.spec?.containers[0]?.image),
      ["nginx:1", "nginx:2"],
    );
  });
});

describe("planDeployment: paused", () => {
  it("a paused Deployment starts no rollout but still scales, and says DeploymentPaused", () => {
    const d = deployment({ replicas: 4, image: "nginx:2", generation: 2, paused: true, status: { replicas: 3 } });
    const old = rs(deployment(), { image: "nginx:1", replicas: 3, created: "2026-01-01T00:00:00Z" });
    const p = planDeployment(d, [old], [], NOW);
    assert.equal(p.create, undefined);
    assert.deepEqual(sizes(p), { "nginx:1": 4 });
    assert.deepEqual([cond(p, "Progressing")?.status, cond(p, "Progressing")?.reason], ["Unknown", Reason.DeploymentPaused]);
  });
});
