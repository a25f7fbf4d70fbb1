import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { kindByResource } from "@choreo/kit";
import { toTable } from "./table.js";

describe("secret table", () => {
  it("prints NAME, TYPE, DATA (the number of keys, never a value) and AGE, as kubectl", () => {
    const info = kindByResource("secrets");
    assert.ok(info);
    const now = Date.parse("2026-01-01T12:00:00Z");
    const created = "2026-01-01T11:58:00Z";
    const t = toTable(
      info,
      [
        {
          metadata: { name: "tls", namespace: "default", creationTimestamp: created },
          type: "kubernetes.io/tls",
          data: { "tls.crt": "Yw==", "tls.key": "aw==" },
        },
        { metadata: { name: "empty", creationTimestamp: created }, type: "Opaque" },
      ],
      { includeObject: "None", resourceVersion: "1", now },
    );
    assert.deepEqual(
      (t["columnDefinitions"] as { name: string }[]).map((c) => c.name),
      ["Name", "Type", "Data", "Age"],
    );
    assert.deepEqual(
      (t["rows"] as { cells: unknown[] }[]).map((r) => r.cells),
      [
        ["tls", "kubernetes.io/tls", 2, "2m"],
        ["empty", "Opaque", 0, "2m"],
      ],
    );
  });
});
