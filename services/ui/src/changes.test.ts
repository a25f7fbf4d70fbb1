// The event stream's model (web/changes.ts, DOM-free): rows merged from
// several watches in revision order, capped, and what a MODIFIED changed.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ChangeLog, changedFields, fieldsOf, summary } from "../web/changes.js";

const cm = (name: string, rv: number, data: Record<string, string>, labels?: Record<string, string>) => ({
  kind: "ConfigMap",
  metadata: { name, namespace: "default", resourceVersion: String(rv), ...(labels ? { labels } : {}) },
  data,
});

describe("ChangeLog", () => {
  it("orders rows by revision whatever watch delivers them first", () => {
    const log = new ChangeLog();
    log.add("configmaps", "ConfigMap", "ADDED", cm("a", 10, {}));
    log.add("configmaps", "ConfigMap", "ADDED", cm("b", 14, {}));
    // A slower watch (another kind) delivers older revisions after.
    log.add("pods", "Pod", "ADDED", { metadata: { name: "p", namespace: "default", resourceVersion: "12" } });
    log.add("pods", "Pod", "DELETED", { metadata: { name: "p", namespace: "default", resourceVersion: "9" } });
    log.add("configmaps", "ConfigMap", "DELETED", cm("a", 15, {}));
    assert.deepEqual(
      log.rows.map((r) => `${r.revision} ${r.verb} ${r.kind} ${r.namespace}/${r.name}`),
      ["9 DELETED Pod default/p", "10 ADDED ConfigMap default/a", "12 ADDED Pod default/p", "14 ADDED ConfigMap default/b", "15 DELETED ConfigMap default/a"],
    );
    assert.equal(log.lastRevision, 15);
    assert.equal(log.received, 5);
  });

  it("says what a MODIFIED changed since the object's last version, ? when it has none", () => {
    const log = new ChangeLog();
    assert.equal(log.add("configmaps", "ConfigMap", "MODIFIED", cm("a", 3, { k: "0" })).changed, undefined);
    log.add("configmaps", "ConfigMap", "ADDED", cm("b", 4, { k: "1" }));
    const r = log.add("configmaps", "ConfigMap", "MODIFIED", cm("b", 5, { k: "2" }, { app: "x" }));
    assert.deepEqual(r.changed, ["data", "metadata.labels"], "resourceVersion is not a change");
    assert.deepEqual(log.add("configmaps", "ConfigMap", "DELETED", cm("b", 6, { k: "2" })).changed, []);
    // Deleted, then created again: its earlier version is forgotten.
    assert.equal(log.add("configmaps", "ConfigMap", "MODIFIED", cm("b", 8, { k: "3" })).changed, undefined);
  });

  it("keeps the last rows only, and forgets the least recently changed objects first", () => {
    const log = new ChangeLog(100, 3);
    for (let i = 1; i <= 1_000; i++) log.add("configmaps", "ConfigMap", "ADDED", cm(`c${i}`, i, {}));
    const kept = log.kept();
    assert.equal(kept.length, 100);
    assert.equal(kept[0]!.revision, 901);
    assert.equal(kept.at(-1)!.revision, 1_000);
    assert.ok(log.rows.length <= 110, "trimmed in batches of a tenth");
    assert.equal(log.dropped + log.rows.length, 1_000);
    // Only c998-c1000 remembered.
    assert.equal(log.add("configmaps", "ConfigMap", "MODIFIED", cm("c997", 1_001, { x: "1" })).changed, undefined);
    assert.deepEqual(log.add("configmaps", "ConfigMap", "MODIFIED", cm("c1000", 1_002, { x: "1" })).changed, ["data"]);
  });
});

describe("what changed", () => {
  it("compares top-level fields and spec/status/metadata one level down", () => {
    const before = fieldsOf({ spec: { replicas: 1, template: { a: 1 } }, status: { readyReplicas: 1 }, metadata: { generation: 1, resourceVersion: "1" } });
    const after = fieldsOf({ spec: { replicas: 3, template: { a: 1 } }, status: {}, metadata: { generation: 2, resourceVersion: "2" } });
    assert.deepEqual(changedFields(before, after), ["spec.replicas", "status.readyReplicas"]);
  });

  it("summarizes: nothing, unknown, up to four fields then +N more", () => {
    assert.equal(summary([]), "");
    assert.equal(summary(undefined), "?");
    assert.equal(summary(["a", "b"]), "a, b");
    assert.equal(summary(["a", "b", "c", "d", "e", "f"]), "a, b, c, d +2 more");
  });
});
