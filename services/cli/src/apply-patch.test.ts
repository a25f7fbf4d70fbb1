import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { LAST_APPLIED, computeApplyPatch, isSubset, lastAppliedOf, originalOf, withLastApplied } from "./apply-patch.js";

type Obj = Record<string, unknown>;

const manifest = (labels: Record<string, string>, image: string, extra: Obj = {}): Obj => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "web", namespace: "default", labels },
  spec: { containers: [{ name: "c", image }], ...extra },
});

/** What the server holds after creating `m`: the manifest plus server fields and defaults. */
function live(m: Obj): Obj {
  const o = structuredClone(withLastApplied(m)) as { metadata: Obj; spec: { containers: Obj[] } & Obj } & Obj;
  o.metadata["uid"] = "u1";
  o.metadata["resourceVersion"] = "5";
  o.metadata["creationTimestamp"] = "2026-01-01T00:00:00Z";
  o.spec.containers = o.spec.containers.map((c) => ({ ...c, imagePullPolicy: "IfNotPresent", terminationMessagePath: "/dev/termination-log" }));
  o.spec["restartPolicy"] = "Always";
  o["status"] = { phase: "Pending" };
  return o;
}

describe("last-applied annotation", () => {
  it("records the manifest without the annotation itself", () => {
    const m = manifest({ app: "web" }, "nginx");
    const w = withLastApplied(m) as { metadata: { annotations: Record<string, string> } };
    assert.equal(w.metadata.annotations[LAST_APPLIED], JSON.stringify(m));
    assert.equal(lastAppliedOf(w), JSON.stringify(m));
    assert.deepEqual(originalOf(w), m);
    assert.equal(originalOf({ metadata: { annotations: { [LAST_APPLIED]: "{broken" } } }), undefined);
  });
  it("keeps the user's other annotations", () => {
    const m = { ...manifest({}, "x"), metadata: { name: "web", annotations: { note: "hi" } } };
    const w = withLastApplied(m) as { metadata: { annotations: Record<string, string> } };
    assert.equal(w.metadata.annotations["note"], "hi");
    assert.ok(w.metadata.annotations[LAST_APPLIED]?.includes('"note":"hi"'));
  });
});

describe("computeApplyPatch", () => {
  it("nothing to send when the same manifest is applied again (server defaults ignored)", () => {
    const m = manifest({ app: "web" }, "nginx");
    assert.equal(computeApplyPatch(withLastApplied(m), live(m)), undefined);
  });

  it("removed keys become null, changed values are sent, and the annotation is updated", () => {
    const before = manifest({ app: "web", tier: "fe" }, "nginx");
    const after = manifest({ app: "web" }, "nginx:2");
    const modified = withLastApplied(after);
    const patch = computeApplyPatch(modified, live(before));
    assert.deepEqual(patch, {
      metadata: { labels: { tier: null }, annotations: { [LAST_APPLIED]: JSON.stringify(after) } },
      spec: { containers: [{ name: "c", image: "nginx:2" }] },
    });
  });

  it("a whole removed field (in last-applied, gone from the manifest) is nulled; fields never applied are left alone", () => {
    const before = manifest({ app: "web" }, "nginx", { nodeSelector: { disk: "ssd" } });
    const after = manifest({ app: "web" }, "nginx");
    const patch = computeApplyPatch(withLastApplied(after), live(before)) as { spec: Obj };
    assert.deepEqual(patch.spec, { nodeSelector: null });
    assert.ok(!("restartPolicy" in patch.spec));
  });

  it("without a last-applied annotation only additions and changes are sent", () => {
    const current = { apiVersion: "v1", kind: "Pod", metadata: { name: "web", labels: { old: "x" } }, spec: { containers: [{ name: "c", image: "nginx" }] } };
    const m = { apiVersion: "v1", kind: "Pod", metadata: { name: "web", labels: { app: "web" } }, spec: { containers: [{ name: "c", image: "nginx" }] } };
    const patch = computeApplyPatch(withLastApplied(m), current) as { metadata: { labels: Obj } };
    assert.deepEqual(patch.metadata.labels, { app: "web" });
  });

  it("explicit nulls in the manifest delete present keys", () => {
    const current = { metadata: { name: "a", labels: { x: "1" } } };
    assert.deepEqual(computeApplyPatch({ metadata: { name: "a", labels: { x: null } } }, current, {}), { metadata: { labels: { x: null } } });
    assert.equal(computeApplyPatch({ metadata: { name: "a", labels: { y: null } } }, current, {}), undefined);
  });

  it("isSubset ignores extra fields but not list lengths", () => {
    assert.ok(isSubset({ a: [{ b: 1 }] }, { a: [{ b: 1, c: 2 }], d: 3 }));
    assert.ok(!isSubset({ a: [{ b: 1 }] }, { a: [{ b: 1 }, { b: 2 }] }));
    assert.ok(!isSubset({ a: 1 }, { a: "1" }));
  });
});
