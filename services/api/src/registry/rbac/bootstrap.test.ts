import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { unwrap, wrap } from "@choreo/kit";
import type { ClusterRole, ClusterRoleBinding } from "@choreo/kit/gen/choreo/rbac/v1/rbac";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { bootstrap } from "../bootstrap.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";
import { AUTOUPDATE_ANNOTATION, bootstrapClusterRoleBindings, bootstrapClusterRoles } from "./bootstrap-policy.js";

const role = async (s: MemoryRegistry, name: string) => unwrap(await s.client.get("clusterroles", "", name)) as ClusterRole;
const crb = async (s: MemoryRegistry, name: string) => unwrap(await s.client.get("clusterrolebindings", "", name)) as ClusterRoleBinding;

describe("the default RBAC policy", () => {
  // The memory registry runs bootstrap as the api does at its start.
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  it("is created at start: every default role and binding, valid, labelled and annotated autoupdate", async () => {
    for (const r of bootstrapClusterRoles()) {
      const got = await role(s, r.metadata!.name);
      assert.equal(got.metadata?.annotations[AUTOUPDATE_ANNOTATION], "true", r.metadata!.name);
      assert.equal(got.metadata?.labels["kubernetes.io/bootstrapping"], "rbac-defaults");
    }
    for (const b of bootstrapClusterRoleBindings()) assert.ok((await crb(s, b.metadata!.name)).roleRef?.name);
    const admin = toKubeJson(await s.client.get("clusterroles", "", "cluster-admin"));
    assert.deepEqual(admin["rules"], [
      { verbs: ["*"], apiGroups: ["*"], resources: ["*"] },
      { verbs: ["*"], nonResourceURLs: ["*"] },
    ]);
    assert.deepEqual(toKubeJson(await s.client.get("clusterroles", "", "view"))["aggregationRule"], {
      clusterRoleSelectors: [{ matchLabels: { "rbac.authorization.k8s.io/aggregate-to-view": "true" } }],
    });
    assert.deepEqual((await crb(s, "cluster-admin")).subjects, [
      { kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: "system:masters", namespace: "" },
    ]);
    assert.deepEqual(
      (await crb(s, "system:public-info-viewer")).subjects.map((x) => x.name),
      ["system:authenticated", "system:unauthenticated"],
    );
    assert.equal((await crb(s, "system:node")).subjects[0]?.name, "system:nodes");
  });

  it("re-creates a deleted default and puts back a removed rule, subject or selector at the next start", async () => {
    await s.client.delete("clusterroles", "", "edit");
    const view = await role(s, "system:aggregate-to-view");
    const dropped = view.rules[0]!;
    await s.client.update(wrap("clusterRole", { ...view, rules: view.rules.slice(1) }));
    assert.ok(!(await role(s, "system:aggregate-to-view")).rules.some((r) => JSON.stringify(r) === JSON.stringify(dropped)));
    await s.client.patch("clusterrolebindings", "", "system:basic-user", "application/merge-patch+json", { subjects: [] });
    await s.client.patch("clusterroles", "", "admin", "application/merge-patch+json", {
      aggregationRule: { clusterRoleSelectors: [{ matchLabels: { team: "a" } }] },
    });
    // A binding to another role is deleted and made again (roleRef cannot change).
    await s.client.delete("clusterrolebindings", "", "system:discovery");
    await s.client.create(
      fromKubeJson({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: "system:discovery", annotations: { [AUTOUPDATE_ANNOTATION]: "true" } },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
        subjects: [{ kind: "User", name: "mallory" }],
      }),
    );

    await bootstrap(s.registry);

    assert.ok((await role(s, "edit")).aggregationRule);
    assert.ok((await role(s, "system:aggregate-to-view")).rules.some((r) => JSON.stringify(r) === JSON.stringify(dropped)));
    assert.deepEqual(
      (await crb(s, "system:basic-user")).subjects.map((x) => x.name),
      ["system:authenticated"],
    );
    // Nothing is removed: the extra selector stays beside the default one.
    assert.deepEqual(
      (await role(s, "admin")).aggregationRule?.clusterRoleSelectors.map((x) => x.matchLabels),
      [{ team: "a" }, { "rbac.authorization.k8s.io/aggregate-to-admin": "true" }],
    );
    const discovery = await crb(s, "system:discovery");
    assert.equal(discovery.roleRef?.name, "system:discovery");
    assert.deepEqual(
      discovery.subjects.map((x) => x.name),
      ["system:authenticated"],
    );
  });

  it('leaves a default annotated autoupdate: "false" as it is', async () => {
    await s.client.patch("clusterroles", "", "system:basic-user", "application/merge-patch+json", {
      metadata: { annotations: { [AUTOUPDATE_ANNOTATION]: "false" } },
      rules: [{ verbs: ["create"], apiGroups: ["authorization.k8s.io"], resources: ["selfsubjectaccessreviews"] }],
    });
    const before = await role(s, "system:basic-user");
    await bootstrap(s.registry);
    const after = await role(s, "system:basic-user");
    assert.equal(after.metadata?.resourceVersion, before.metadata?.resourceVersion);
    assert.equal(after.rules.length, 1);
  });

  it("writes nothing at a start where everything is in place", async () => {
    await bootstrap(s.registry);
    const versions = async () => {
      const out: string[] = [];
      for (const r of ["clusterroles", "clusterrolebindings"])
        for (const o of (await s.client.list(r)).items) out.push(`${unwrap(o).metadata?.name}@${unwrap(o).metadata?.resourceVersion}`);
      return out.sort();
    };
    const before = await versions();
    await bootstrap(s.registry);
    assert.deepEqual(await versions(), before);
  });
});
