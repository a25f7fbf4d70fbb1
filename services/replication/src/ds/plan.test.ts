import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import type { DaemonSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { pod } from "../testing.js";
import { REVISION_LABEL, eligible, planDaemonSet, scaled, templateHash } from "./plan.js";

const node = (name: string, o: { labels?: Record<string, string>; taints?: { key: string; value?: string; effect: string }[] } = {}): Node =>
  unwrap(fromKubeJson({ apiVersion: "v1", kind: "Node", metadata: { name, labels: o.labels ?? {} }, spec: { taints: o.taints ?? [] } })) as Node;

const ds = (o: { nodeSelector?: Record<string, string>; maxUnavailable?: number | string; onDelete?: boolean; image?: string } = {}): DaemonSet =>
  unwrap(
    fromKubeJson({
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: { name: "d", namespace: "default", uid: "uid-d", generation: 2 },
      spec: {
        selector: { matchLabels: { app: "d" } },
        updateStrategy: o.onDelete ? { type: "OnDelete" } : { type: "RollingUpdate", rollingUpdate: { maxUnavailable: o.maxUnavailable ?? 1 } },
        template: { metadata: { labels: { app: "d" } }, spec: { nodeSelector: o.nodeSelector ?? {}, containers: [{ name: "c", image: o.image ?? "v1" }] } },
      },
    }),
  ) as DaemonSet;

const daemonPod = (name: string, nodeName: string, d: DaemonSet, o: { ready?: boolean; hash?: string } = {}): Pod => {
  const p = pod(name, { node: nodeName, ready: o.ready, owner: { kind: "DaemonSet", name: "d", uid: "uid-d" } });
  p.metadata!.labels[REVISION_LABEL] = o.hash ?? templateHash(d.spec?.template);
  return p;
};

describe("DaemonSet plan", () => {
  it("the template hash survives an api round trip (the JSON decode adds empty structs) and changes with the template", () => {
    const d = ds();
    const again = unwrap(fromKubeJson(toKubeJson({ kind: { $case: "daemonSet", value: d } }))) as DaemonSet;
    assert.notDeepEqual(again.spec?.template, d.spec?.template, "decoded with other (empty) values: the case this guards");
    assert.equal(templateHash(again.spec?.template), templateHash(d.spec?.template));
    assert.notEqual(templateHash(ds({ image: "v2" }).spec?.template), templateHash(d.spec?.template));
  });
  it("a pod for every eligible node: nodeSelector must match, NoSchedule/NoExecute taints must be tolerated; not-ready/unreachable are tolerated by default", () => {
    const d = ds({ nodeSelector: { disk: "ssd" } });
    assert.equal(eligible(d, node("a", { labels: { disk: "ssd" } })), true);
    assert.equal(eligible(d, node("b")), false);
    assert.equal(eligible(d, node("c", { labels: { disk: "ssd" }, taints: [{ key: "dedicated", value: "gpu", effect: "NoSchedule" }] })), false);
    assert.equal(eligible(d, node("d", { labels: { disk: "ssd" }, taints: [{ key: "dedicated", effect: "PreferNoSchedule" }] })), true);
    assert.equal(eligible(d, node("e", { labels: { disk: "ssd" }, taints: [{ key: "node.kubernetes.io/unreachable", effect: "NoExecute" }] })), true);
  });

  it("creates on nodes without a pod, deletes pods on nodes that are gone or ineligible, and duplicates", () => {
    const d = ds();
    const p = planDaemonSet(d, [node("a"), node("b")], [daemonPod("on-a", "a", d), daemonPod("on-a-2", "a", d), daemonPod("on-gone", "gone", d)], Date.now());
    assert.deepEqual(p.create, ["b"]);
    assert.deepEqual(p.remove.map((x) => x.metadata?.name).sort(), ["on-a-2", "on-gone"]);
    assert.equal(p.status.desiredNumberScheduled, 2);
    assert.equal(p.status.currentNumberScheduled, 1);
    assert.equal(p.status.numberMisscheduled, 1);
    assert.equal(p.status.observedGeneration, 2);
  });

  it("rolling update replaces at most maxUnavailable available old pods at a time; old unavailable ones go for free", () => {
    const old = ds({ image: "v1" });
    const d = ds({ image: "v2", maxUnavailable: 1 });
    const nodes = [node("a"), node("b"), node("c")];
    const oldPods = [daemonPod("pa", "a", old), daemonPod("pb", "b", old), daemonPod("pc", "c", old, { ready: false })];
    const p = planDaemonSet(d, nodes, oldPods, Date.now());
    assert.deepEqual(
      p.remove.map((x) => x.metadata?.name),
      ["pc"],
      "c is already unavailable: it uses the budget",
    );
    const p2 = planDaemonSet(d, nodes, oldPods.slice(0, 2), Date.now());
    assert.deepEqual(p2.create, ["c"]);
    assert.equal(p2.remove.length, 0, "c has no available pod yet: no budget left");
    const p3 = planDaemonSet(d, nodes, [...oldPods.slice(0, 2), daemonPod("pc2", "c", d)], Date.now());
    assert.deepEqual(
      p3.remove.map((x) => x.metadata?.name),
      ["pa"],
    );
    assert.equal(p3.status.updatedNumberScheduled, 1);
  });

  it("maxUnavailable as a percentage rounds up; OnDelete never replaces old pods", () => {
    assert.equal(scaled({ value: { $case: "strVal", value: "10%" } }, 15, 1), 2);
    const old = ds({ image: "v1" });
    const d = ds({ image: "v2", onDelete: true });
    const p = planDaemonSet(d, [node("a")], [daemonPod("pa", "a", old)], Date.now());
    assert.equal(p.remove.length, 0);
    assert.equal(p.status.updatedNumberScheduled, 0);
  });
});
