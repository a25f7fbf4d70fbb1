import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { kindByResource } from "@choreo/kit";
import { toTable } from "./table.js";

describe("configmap table", () => {
  it("prints NAME, DATA (keys of data and binaryData) and AGE, as kubectl", () => {
    const info = kindByResource("configmaps");
    assert.ok(info);
    const now = Date.parse("2026-01-01T12:00:00Z");
    const cm = {
      metadata: { name: "game", namespace: "default", creationTimestamp: "2026-01-01T11:55:00Z" },
      data: { a: "1", b: "2" },
      binaryData: { c: "AA==" },
    };
    const t = toTable(info, [cm, { metadata: { name: "empty", creationTimestamp: "2026-01-01T11:55:00Z" } }], {
      includeObject: "None",
      resourceVersion: "1",
      now,
    });
    assert.deepEqual(
      (t["columnDefinitions"] as { name: string }[]).map((c) => c.name),
      ["Name", "Data", "Age"],
    );
    assert.deepEqual(
      (t["rows"] as { cells: unknown[] }[]).map((r) => r.cells),
      [
        ["game", 3, "5m"],
        ["empty", 0, "5m"],
      ],
    );
  });
});
