import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { alignRows, asList, cellText, formatJson, formatTable, formatYaml, tableFromObjects, type Table } from "./printers.js";

const TABLE: Table = {
  columnDefinitions: [
    { name: "Name", format: "name", priority: 0 },
    { name: "Ready", priority: 0 },
    { name: "Status", priority: 0 },
    { name: "IP", priority: 1 },
    { name: "Nominated Node", priority: 1 },
  ],
  rows: [
    { cells: ["web-1", "1/1", "Running", "10.0.0.5", "<none>"], object: { metadata: { name: "web-1", namespace: "default", labels: { app: "web" } } } },
    { cells: ["db", "0/1", "ContainerCreating", null, "<none>"], object: { metadata: { name: "db", namespace: "team-b" } } },
  ],
};

describe("alignRows", () => {
  it("pads every column but the last to its widest cell plus three spaces", () => {
    assert.deepEqual(
      alignRows([
        ["NAME", "AGE"],
        ["a-long-name", "5s"],
      ]),
      ["NAME          AGE", "a-long-name   5s"],
    );
  });
  it("keeps minimum widths (for rows printed later by a watch)", () => {
    assert.deepEqual(alignRows([["a", "b"]], [5]), ["a       b"]);
  });
});

describe("formatTable", () => {
  it("prints upper-case headers and priority-0 columns by default", () => {
    assert.deepEqual(formatTable(TABLE), ["NAME    READY   STATUS", "web-1   1/1     Running", "db      0/1     ContainerCreating"]);
  });
  it("-o wide adds priority-1 columns; null cells print <none>", () => {
    assert.deepEqual(formatTable(TABLE, { wide: true }), [
      "NAME    READY   STATUS              IP         NOMINATED NODE",
      "web-1   1/1     Running             10.0.0.5   <none>",
      "db      0/1     ContainerCreating   <none>     <none>",
    ]);
  });
  it("-A adds NAMESPACE first; --no-headers drops the header; several types prefix names; --show-labels", () => {
    assert.deepEqual(formatTable(TABLE, { withNamespace: true, noHeaders: true, kindPrefix: { kind: "Pod", group: "" } }), [
      "default   pod/web-1   1/1   Running",
      "team-b    pod/db      0/1   ContainerCreating",
    ]);
    assert.deepEqual(
      formatTable(TABLE, { showLabels: true, kindPrefix: { kind: "DaemonSet", group: "apps" } })[1],
      "daemonset.apps/web-1   1/1     Running             app=web",
    );
  });
  it("a plain list becomes NAME and AGE", () => {
    const t = tableFromObjects([{ metadata: { name: "x", creationTimestamp: "2026-01-01T00:00:00Z" } }], Date.parse("2026-01-01T00:00:45Z"));
    assert.deepEqual(formatTable(t), ["NAME   AGE", "x      45s"]);
  });
});

describe("machine formats", () => {
  it("JSON with 4 spaces, YAML, List", () => {
    assert.equal(formatJson({ a: 1 }), '{\n    "a": 1\n}');
    assert.equal(formatYaml({ a: { b: [1] } }), "a:\n  b:\n    - 1");
    assert.deepEqual(asList([{ kind: "Pod" }]), { apiVersion: "v1", items: [{ kind: "Pod" }], kind: "List", metadata: { resourceVersion: "" } });
    assert.equal(cellText(3), "3");
    assert.equal(cellText(undefined), "<none>");
  });
});
