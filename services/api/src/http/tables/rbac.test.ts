import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { kindByResource } from "@choreo/kit";
import { toTable } from "./table.js";

const NOW = Date.parse("2026-01-01T12:00:00Z");
const CREATED = "2026-01-01T11:58:00Z";

function rows(resource: string, objects: Record<string, unknown>[]): { names: string[]; wide: number[]; cells: unknown[][] } {
  const info = kindByResource(resource);
  assert.ok(info, resource);
  const t = toTable(info, objects, { includeObject: "None", resourceVersion: "1", now: NOW });
  const cols = t["columnDefinitions"] as { name: string; priority: number }[];
  return {
    names: cols.map((c) => c.name),
    wide: cols.filter((c) => c.priority === 1).map((_, i) => i),
    cells: (t["rows"] as { cells: unknown[] }[]).map((r) => r.cells),
  };
}

describe("rbac and serviceaccount tables", () => {
  it("roles and clusterroles print NAME and CREATED AT (RFC 3339), as kubectl's printRole", () => {
    for (const resource of ["roles", "clusterroles"]) {
      const t = rows(resource, [{ metadata: { name: "system:node", creationTimestamp: CREATED }, rules: [] }]);
      assert.deepEqual(t.names, ["Name", "Created At"]);
      assert.deepEqual(t.cells, [["system:node", CREATED]]);
    }
  });

  it("bindings print ROLE as Kind/name and, wide, users, groups and service accounts as namespace/name", () => {
    for (const resource of ["rolebindings", "clusterrolebindings"]) {
      const t = rows(resource, [
        {
          metadata: { name: "b", creationTimestamp: CREATED },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "edit" },
          subjects: [
            { kind: "User", name: "alice" },
            { kind: "Group", name: "devs" },
            { kind: "User", name: "bob" },
            { kind: "ServiceAccount", namespace: "ci", name: "deployer" },
          ],
        },
      ]);
      assert.deepEqual(t.names, ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]);
      assert.equal(t.wide.length, 3);
      assert.deepEqual(t.cells, [["b", "ClusterRole/edit", "2m", "alice, bob", "devs", "ci/deployer"]]);
    }
  });

  it("serviceaccounts print NAME, SECRETS (a count) and AGE", () => {
    const t = rows("serviceaccounts", [
      { metadata: { name: "default", creationTimestamp: CREATED } },
      { metadata: { name: "ci", creationTimestamp: CREATED }, secrets: [{ name: "a" }, { name: "b" }] },
    ]);
    assert.deepEqual(t.names, ["Name", "Secrets", "Age"]);
    assert.deepEqual(t.cells, [
      ["default", 0, "2m"],
      ["ci", 2, "2m"],
    ]);
  });
});
