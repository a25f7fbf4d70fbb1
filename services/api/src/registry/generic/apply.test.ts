// Server-side apply and managedFields through the registry, on the in-memory storage.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ApiError, unwrap } from "@choreo/kit";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import type { Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";

const RC = (replicas: number, image = "nginx"): string => `apiVersion: v1
kind: ReplicationController
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: ${replicas}
  selector: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: ${image}
        ports:
        - containerPort: 80
`;

const managers = (o: ApiObject): string[] =>
  (unwrap(o).metadata?.managedFields ?? []).map((e) => `${e.manager}/${e.operation}${e.subresource ? `/${e.subresource}` : ""}`);

describe("server-side apply (registry, memory storage)", () => {
  let m: MemoryRegistry;
  before(async () => {
    m = await startMemoryRegistry();
  });
  after(() => undefined);

  const apply = (patch: string, manager = "kubectl", force = false): Promise<ApiObject> =>
    m.registry.patch({
      resource: "replicationcontrollers",
      namespace: "default",
      name: "web",
      patchType: "application/apply-patch+yaml",
      patch,
      subresource: "",
      fieldManager: manager,
      force,
    });

  it("creates, and applying again changes nothing (same resourceVersion)", async () => {
    const created = await apply(RC(2));
    const meta = unwrap(created).metadata!;
    assert.equal(meta.generation, 1);
    assert.deepEqual(managers(created), ["kubectl/Apply"]);
    const json = toKubeJson(created);
    const entry = (json["metadata"] as { managedFields: Record<string, unknown>[] }).managedFields[0]!;
    assert.equal(entry["fieldsType"], "FieldsV1");
    assert.deepEqual((entry["fieldsV1"] as Record<string, Record<string, unknown>>)["f:spec"]!["f:replicas"], {});
    const again = await apply(RC(2));
    assert.equal(unwrap(again).metadata?.resourceVersion, meta.resourceVersion);
  });

  it("a scale by another manager conflicts with a different applied value; force takes it", async () => {
    const scaled = await m.registry.updateScale({
      resource: "replicationcontrollers",
      namespace: "default",
      name: "web",
      fieldManager: "kubectl-scale",
      scale: { apiVersion: "autoscaling/v1", kind: "Scale", metadata: undefined, spec: { replicas: 5 }, status: undefined },
    });
    assert.equal(scaled.spec?.replicas, 5);
    const rc = await m.registry.get({ resource: "replicationcontrollers", namespace: "default", name: "web" });
    assert.deepEqual(managers(rc), ["kubectl/Apply", "kubectl-scale/Update/scale"]);

    const before = unwrap(rc).metadata?.resourceVersion;
    await assert.rejects(apply(RC(2)), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.code, 409);
      assert.equal(err.reason, "Conflict");
      assert.equal(err.message, 'Apply failed with 1 conflict: conflict with "kubectl-scale" using v1: .spec.replicas');
      assert.deepEqual(err.status.details?.causes, [
        { reason: "FieldManagerConflict", message: 'conflict with "kubectl-scale" using v1', field: ".spec.replicas" },
      ]);
      return true;
    });
    const still = await m.registry.get({ resource: "replicationcontrollers", namespace: "default", name: "web" });
    assert.equal(unwrap(still).metadata?.resourceVersion, before, "a conflict writes nothing");

    const forced = await apply(RC(2), "kubectl", true);
    assert.equal((unwrap(forced) as { spec?: { replicas?: number } }).spec?.replicas, 2);
    assert.deepEqual(managers(forced), ["kubectl/Apply"]);
  });

  it("records Update managers for create, update and patch", async () => {
    const cm = fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "mf", namespace: "default" }, data: { a: "1" } });
    const created = await m.registry.create({ object: cm, dryRun: false, fieldManager: "kubectl-create" });
    assert.deepEqual(managers(created), ["kubectl-create/Update"]);
    const patched = await m.registry.patch({
      resource: "configmaps",
      namespace: "default",
      name: "mf",
      patchType: "application/merge-patch+json",
      patch: JSON.stringify({ metadata: { labels: { tier: "a" } } }),
      subresource: "",
      fieldManager: "kubectl-label",
    });
    assert.deepEqual(managers(patched), ["kubectl-create/Update", "kubectl-label/Update"]);
    const label = (unwrap(patched).metadata?.managedFields ?? [])[1]!;
    assert.deepEqual(JSON.parse(Buffer.from(label.fieldsV1!.raw).toString()), { "f:metadata": { "f:labels": { "f:tier": {} } } });
    // An update sent without managedFields keeps them.
    const v = unwrap(patched);
    v.metadata!.managedFields = [];
    const updated = await m.registry.update({ object: patched, dryRun: false });
    assert.deepEqual(managers(updated), ["kubectl-create/Update", "kubectl-label/Update"]);
  });

  it("applies to a pod (immutable spec but images) and patches its labels", async () => {
    const POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: nginx, ports: [{containerPort: 80}]}]\n";
    const ap = (y: string): Promise<ApiObject> =>
      m.registry.patch({
        resource: "pods",
        namespace: "default",
        name: "p",
        patchType: "application/apply-patch+yaml",
        patch: y,
        subresource: "",
        fieldManager: "me",
      });
    const created = await ap(POD);
    const same = await ap(POD);
    assert.equal(unwrap(same).metadata?.resourceVersion, unwrap(created).metadata?.resourceVersion);
    const image = await ap(POD.replace("image: nginx", "image: nginx:2"));
    assert.equal((unwrap(image) as { spec?: { containers: { image: string }[] } }).spec?.containers[0]?.image, "nginx:2");
    const labeled = await m.registry.patch({
      resource: "pods",
      namespace: "default",
      name: "p",
      patchType: "application/strategic-merge-patch+json",
      patch: JSON.stringify({ metadata: { labels: { x: "y" } } }),
      subresource: "",
      fieldManager: "kubectl-label",
    });
    assert.deepEqual(managers(labeled), ["me/Apply", "kubectl-label/Update"]);
  });

  it("refuses an apply without a field manager or of another kind, changing nothing", async () => {
    await assert.rejects(apply(RC(3), ""), /fieldManager is required/);
    await assert.rejects(apply(RC(3).replace("kind: ReplicationController", "kind: Pod")), /the apply configuration is a Pod/);
  });
});
