import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { changedFields, formatLine } from "./events.js";

describe("choreo events: what changed", () => {
  it("names the top-level fields and metadata.<field> that differ, not resourceVersion", () => {
    const before = { metadata: { name: "a", resourceVersion: "1", labels: { x: "1" } }, spec: { replicas: 1 }, status: { ready: 0 } };
    const after = { metadata: { name: "a", resourceVersion: "2", labels: { x: "2" } }, spec: { replicas: 1 }, status: { ready: 1 }, data: {} };
    assert.deepEqual(changedFields(before, after), ["data", "metadata.labels", "status"]);
    assert.deepEqual(changedFields(before, before), []);
  });

  it("prints REVISION VERB KIND NAMESPACE/NAME CHANGED (? when the previous version was not seen)", () => {
    const line = formatLine({ revision: 42, type: "MODIFIED", kind: "Pod", namespace: "default", name: "web", changed: undefined, object: {} }, false);
    assert.deepEqual(line.split(/\s+/), ["42", "MODIFIED", "Pod", "default/web", "?"]);
    const node = formatLine({ revision: 7, type: "ADDED", kind: "Node", namespace: "", name: "n1", changed: [], object: {} }, false);
    assert.deepEqual(node.split(/\s+/), ["7", "ADDED", "Node", "n1"]);
  });
});
