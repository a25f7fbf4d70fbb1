import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import type { ApiError } from "@choreo/kit";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { rejects } from "../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";

const RBAC = "rbac.authorization.k8s.io/v1";
const G = "rbac.authorization.k8s.io";
const obj = (kind: string, name: string, body: Record<string, unknown>, namespace?: string) =>
  fromKubeJson({ apiVersion: kind === "ServiceAccount" ? "v1" : RBAC, kind, metadata: { name, ...(namespace ? { namespace } : {}) }, ...body });
const fields = (err: ApiError) => (err.status.details?.causes ?? []).map((c) => `${c.field} ${c.reason}`).sort();

describe("rbac kinds and serviceaccounts on the registry", () => {
  // On the in-memory storage: validation and defaults are the strategies', no server needed.
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  it("stores a Role and a ClusterRole with system: names and nonResourceURLs in Kubernetes JSON", async () => {
    const role = toKubeJson(
      await s.client.create(obj("Role", "pod-reader", { rules: [{ verbs: ["get", "list"], apiGroups: [""], resources: ["pods"] }] }, "default")),
    );
    assert.deepEqual(role["rules"], [{ verbs: ["get", "list"], apiGroups: [""], resources: ["pods"] }]);
    const cr = toKubeJson(
      await s.client.create(obj("ClusterRole", "system:probe", { rules: [{ verbs: ["get"], nonResourceURLs: ["/healthz", "/version"] }] })),
    );
    assert.deepEqual(cr["rules"], [{ verbs: ["get"], nonResourceURLs: ["/healthz", "/version"] }]);
    assert.equal(toKubeJson(await s.client.get("clusterroles", "", "system:probe"))["metadata"] !== undefined, true);
    // A role without rules still writes rules: [] (Go's json tag has no omitempty).
    assert.deepEqual(toKubeJson(await s.client.create(obj("ClusterRole", "empty", {})))["rules"], []);
  });

  it("refuses bad rules with Kubernetes' field paths: verbs required, resources XOR nonResourceURLs, nonResourceURLs only cluster-wide", async () => {
    let err = await rejects(
      s.client.create(obj("Role", "r1", { rules: [{ apiGroups: [""], resources: ["pods"] }, { verbs: ["get"] }] }, "default")),
      422,
      "Invalid",
    );
    assert.deepEqual(fields(err), ["rules[0].verbs FieldValueRequired", "rules[1].apiGroups FieldValueRequired", "rules[1].resources FieldValueRequired"]);
    err = await rejects(
      s.client.create(obj("Role", "r2", { rules: [{ verbs: ["get"], nonResourceURLs: ["/x"] }] }, "default")),
      422,
      "Invalid",
      /namespaced rules cannot apply to non-resource URLs/,
    );
    assert.deepEqual(fields(err), ["rules[0].nonResourceURLs FieldValueInvalid"]);
    err = await rejects(
      s.client.create(obj("ClusterRole", "c1", { rules: [{ verbs: ["get"], resources: ["pods"], nonResourceURLs: ["/x"] }] })),
      422,
      "Invalid",
      /rules cannot apply to both regular resources and non-resource URLs/,
    );
    err = await rejects(s.client.create(obj("ClusterRole", "c2", { aggregationRule: { clusterRoleSelectors: [] } })), 422, "Invalid");
    assert.deepEqual(fields(err), ["aggregationRule.clusterRoleSelectors FieldValueRequired"]);
    // Path-segment names: no slash, not "..".
    await rejects(s.client.create(obj("ClusterRole", "..", {})), 422, "Invalid", /may not be '\.\.'/);
    await rejects(s.client.create(obj("Role", "a%b", {}, "default")), 422, "Invalid", /may not contain '%'/);
    for (const n of ["r1", "r2"]) await rejects(s.client.get("roles", "default", n), 404, "NotFound");
  });

  it("defaults roleRef and subject apiGroups and keeps roleRef from changing", async () => {
    const rb = toKubeJson(
      await s.client.create(
        obj(
          "RoleBinding",
          "read",
          {
            roleRef: { kind: "Role", name: "pod-reader" },
            subjects: [
              { kind: "User", name: "alice" },
              { kind: "Group", name: "devs" },
              { kind: "ServiceAccount", name: "default" },
            ],
          },
          "default",
        ),
      ),
    );
    assert.deepEqual(rb["roleRef"], { apiGroup: G, kind: "Role", name: "pod-reader" });
    assert.deepEqual(rb["subjects"], [
      { kind: "User", apiGroup: G, name: "alice" },
      { kind: "Group", apiGroup: G, name: "devs" },
      { kind: "ServiceAccount", name: "default" },
    ]);
    // Subjects may change; roleRef may not.
    const changed = toKubeJson(await s.client.update(fromKubeJson({ ...rb, subjects: [{ kind: "User", name: "bob" }] })));
    assert.deepEqual(changed["subjects"], [{ kind: "User", apiGroup: G, name: "bob" }]);
    const err = await rejects(
      s.client.update(fromKubeJson({ ...changed, roleRef: { apiGroup: G, kind: "ClusterRole", name: "view" } })),
      422,
      "Invalid",
      /cannot change roleRef/,
    );
    assert.deepEqual(fields(err), ["roleRef FieldValueInvalid"]);
    await rejects(
      s.client.patch("rolebindings", "default", "read", "application/merge-patch+json", { roleRef: { name: "other" } }),
      422,
      "Invalid",
      /cannot change roleRef/,
    );
    assert.deepEqual(toKubeJson(await s.client.get("rolebindings", "default", "read"))["roleRef"], { apiGroup: G, kind: "Role", name: "pod-reader" });
  });

  it("validates roleRef and subjects as Kubernetes: kinds, apiGroups, a ServiceAccount's namespace in a ClusterRoleBinding", async () => {
    let err = await rejects(s.client.create(obj("RoleBinding", "b1", { subjects: [{ kind: "Robot", name: "r" }] }, "default")), 422, "Invalid");
    assert.deepEqual(fields(err), ["roleRef.kind FieldValueNotSupported", "roleRef.name FieldValueRequired", "subjects[0].kind FieldValueNotSupported"]);
    err = await rejects(
      s.client.create(
        obj("ClusterRoleBinding", "b2", {
          roleRef: { apiGroup: "example.com", kind: "Role", name: "x" },
          subjects: [
            { kind: "ServiceAccount", name: "ci" },
            { kind: "ServiceAccount", apiGroup: G, name: "ci", namespace: "ci" },
            { kind: "User", apiGroup: "example.com", name: "u" },
            { kind: "Group", apiGroup: G },
          ],
        }),
      ),
      422,
      "Invalid",
    );
    assert.deepEqual(fields(err), [
      "roleRef.apiGroup FieldValueNotSupported",
      "roleRef.kind FieldValueNotSupported",
      "subjects[0].namespace FieldValueRequired",
      "subjects[1].apiGroup FieldValueNotSupported",
      "subjects[2].apiGroup FieldValueNotSupported",
      "subjects[3].name FieldValueRequired",
    ]);
    const crb = toKubeJson(
      await s.client.create(
        obj("ClusterRoleBinding", "ci-view", {
          roleRef: { kind: "ClusterRole", name: "view" },
          subjects: [{ kind: "ServiceAccount", name: "ci", namespace: "ci" }],
        }),
      ),
    );
    assert.deepEqual(crb["roleRef"], { apiGroup: G, kind: "ClusterRole", name: "view" });
    for (const n of ["b1", "b2"])
      await rejects(s.client.get(n === "b1" ? "rolebindings" : "clusterrolebindings", n === "b1" ? "default" : "", n), 404, "NotFound");
  });

  it("stores ServiceAccounts with secrets, imagePullSecrets and automountServiceAccountToken; names are DNS subdomains", async () => {
    const sa = toKubeJson(
      await s.client.create(
        obj("ServiceAccount", "builder", { secrets: [{ name: "tok" }], imagePullSecrets: [{ name: "reg" }], automountServiceAccountToken: false }, "default"),
      ),
    );
    assert.deepEqual([sa["secrets"], sa["imagePullSecrets"], sa["automountServiceAccountToken"]], [[{ name: "tok" }], [{ name: "reg" }], false]);
    assert.equal(toKubeJson(await s.client.create(obj("ServiceAccount", "plain", {}, "default")))["automountServiceAccountToken"], undefined);
    await rejects(s.client.create(obj("ServiceAccount", "Bad_Name", {}, "default")), 422, "Invalid");
  });
});
