import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  applyConfig,
  conflictMessage,
  FieldSet,
  fieldsOf,
  mergeApplied,
  pathString,
  recordUpdate,
  type ApplyOutcome,
  type JsonObject,
  type ManagedEntry,
} from "./managed-fields.js";

const rc = (replicas: number, image = "nginx", extra: JsonObject = {}): JsonObject => ({
  apiVersion: "v1",
  kind: "ReplicationController",
  metadata: { name: "web", namespace: "default", labels: { app: "web" } },
  spec: {
    replicas,
    selector: { app: "web" },
    template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "web", image, ports: [{ containerPort: 80 }] }] } },
    ...extra,
  },
});

const T0 = "2026-01-01T00:00:00Z";
const T1 = "2026-01-01T00:01:00Z";

function applied(r: ReturnType<typeof applyConfig>): ApplyOutcome {
  assert.ok(!("conflicts" in r), `conflicts: ${JSON.stringify(r)}`);
  return r;
}

describe("field sets", () => {
  it("are Kubernetes' FieldsV1: f: fields, k: list items by merge key with '.', server fields and status left out", () => {
    const obj = { ...rc(2), metadata: { name: "web", uid: "u", resourceVersion: "9", labels: { app: "web" } }, status: { replicas: 1 } };
    assert.deepEqual(fieldsOf(obj).toFieldsV1(), {
      "f:metadata": { "f:labels": { "f:app": {} } },
      "f:spec": {
        "f:replicas": {},
        "f:selector": { "f:app": {} },
        "f:template": {
          "f:metadata": { "f:labels": { "f:app": {} } },
          "f:spec": {
            "f:containers": {
              'k:{"name":"web"}': { ".": {}, "f:name": {}, "f:image": {}, "f:ports": { 'k:{"containerPort":80}': { ".": {}, "f:containerPort": {} } } },
            },
          },
        },
      },
    });
    assert.deepEqual(fieldsOf(obj, "status").toFieldsV1(), { "f:status": { "f:replicas": {} } });
    // A metadata with server fields only is no field at all; an empty map is one.
    assert.deepEqual(fieldsOf({ metadata: { name: "x", namespace: "d" }, spec: { volumes: [{ name: "v", emptyDir: {} }] } }).toFieldsV1(), {
      "f:spec": { "f:volumes": { 'k:{"name":"v"}': { ".": {}, "f:name": {}, "f:emptyDir": {} } } },
    });
    assert.deepEqual(fieldsOf({ metadata: { finalizers: ["a", "b"] }, spec: { args: ["x"] } }).toFieldsV1(), {
      "f:metadata": { "f:finalizers": { 'v:"a"': {}, 'v:"b"': {} } },
      "f:spec": { "f:args": {} },
    });
  });

  it("round-trip through FieldsV1 and combine as sets", () => {
    const s = fieldsOf(rc(1));
    assert.ok(FieldSet.fromFieldsV1(s.toFieldsV1()).equals(s));
    const a = FieldSet.of([["f:a"], ["f:b"]]);
    const b = FieldSet.of([["f:b"], ["f:c"]]);
    assert.deepEqual(a.union(b).members(), [["f:a"], ["f:b"], ["f:c"]]);
    assert.deepEqual(a.minus(b).members(), [["f:a"]]);
    assert.deepEqual(a.intersect(b).members(), [["f:b"]]);
    assert.equal(pathString(["f:spec", "f:containers", 'k:{"name":"web"}', "f:image"]), '.spec.containers[name="web"].image');
  });
});

describe("apply", () => {
  const opts = { manager: "kubectl", apiVersion: "v1", force: false, now: T0 };

  it("creates: the config is the object, the manager owns every field", () => {
    const r = applied(applyConfig(undefined, [], rc(2), opts));
    assert.deepEqual(r.object, rc(2));
    assert.equal(r.managedFields.length, 1);
    assert.deepEqual(r.managedFields[0], {
      manager: "kubectl",
      operation: "Apply",
      apiVersion: "v1",
      time: T0,
      fieldsType: "FieldsV1",
      fieldsV1: fieldsOf(rc(2)).toFieldsV1(),
    });
  });

  it("twice is a no-op: same object, same entries (time kept)", () => {
    const first = applied(applyConfig(undefined, [], rc(2), opts));
    const again = applied(applyConfig(first.object, first.managedFields, rc(2), { ...opts, now: T1 }));
    assert.deepEqual(again.object, first.object);
    assert.deepEqual(again.managedFields, first.managedFields);
  });

  it("conflicts with another manager's different value; force takes the field; same values share", () => {
    const first = applied(applyConfig(undefined, [], rc(2), opts));
    // kubectl scale: an Update by another manager changes spec.replicas.
    const scaled = rc(5);
    const managed = recordUpdate(first.managedFields, first.object, scaled, { manager: "kubectl-scale", apiVersion: "v1", subresource: "scale", now: T1 });
    assert.deepEqual(managed[1]?.fieldsV1, { "f:spec": { "f:replicas": {} } });
    assert.deepEqual(
      managed[0]?.fieldsV1,
      fieldsOf({ ...rc(2), spec: { ...(rc(2)["spec"] as JsonObject), replicas: undefined } } as unknown as JsonObject).toFieldsV1(),
    );

    const r = applyConfig(scaled, managed, rc(2), opts);
    assert.ok("conflicts" in r);
    assert.deepEqual(r.conflicts, [{ manager: "kubectl-scale", operation: "Update", apiVersion: "v1", path: ["f:spec", "f:replicas"] }]);
    assert.equal(conflictMessage(r.conflicts), 'Apply failed with 1 conflict: conflict with "kubectl-scale" using v1: .spec.replicas');

    // Applying the scaled value does not conflict: both own it.
    const shared = applied(applyConfig(scaled, managed, rc(5), opts));
    assert.equal(shared.managedFields.length, 2);

    const forced = applied(applyConfig(scaled, managed, rc(2), { ...opts, force: true }));
    assert.equal((forced.object["spec"] as JsonObject)["replicas"], 2);
    assert.equal(forced.managedFields.length, 1, "kubectl-scale owned nothing else");
    assert.equal(forced.managedFields[0]?.manager, "kubectl");
  });

  it("removes the fields the manager stopped applying, unless another manager owns them", () => {
    const withLabel = rc(1, "nginx", { minReadySeconds: 5 });
    const first = applied(applyConfig(undefined, [], withLabel, opts));
    const second = applied(applyConfig(first.object, first.managedFields, rc(1), opts));
    assert.equal((second.object["spec"] as JsonObject)["minReadySeconds"], undefined);

    // Another applier owns minReadySeconds too: it stays.
    const both = applied(applyConfig(first.object, first.managedFields, { ...withLabel }, { ...opts, manager: "other" }));
    const third = applied(applyConfig(both.object, both.managedFields, rc(1), opts));
    assert.equal((third.object["spec"] as JsonObject)["minReadySeconds"], 5);
  });

  it("merges associative lists by key: another manager's container stays, a dropped one of ours goes", () => {
    const two = rc(1);
    const tmpl = ((two["spec"] as JsonObject)["template"] as JsonObject)["spec"] as JsonObject;
    tmpl["containers"] = [...(tmpl["containers"] as JsonObject[]), { name: "side", image: "busybox" }];
    const first = applied(applyConfig(undefined, [], two, opts));
    const second = applied(applyConfig(first.object, first.managedFields, rc(1, "nginx:2"), opts));
    const containers = (((second.object["spec"] as JsonObject)["template"] as JsonObject)["spec"] as JsonObject)["containers"] as JsonObject[];
    assert.deepEqual(
      containers.map((c) => [c["name"], c["image"]]),
      [["web", "nginx:2"]],
    );
    // Fields merge inside an item (removal is the field sets' job); unnamed items stay; atomic lists are replaced.
    assert.deepEqual(
      mergeApplied({ containers: [{ name: "a", x: 1 }, { name: "b" }], args: ["1", "2"] } as JsonObject, { containers: [{ name: "a", y: 2 }], args: ["3"] }, [
        "spec",
      ]),
      { containers: [{ name: "a", x: 1, y: 2 }, { name: "b" }], args: ["3"] },
    );
  });
});

describe("update", () => {
  it("gives the writer what it changed and takes it from the others; created objects are the creator's", () => {
    const created = recordUpdate([], undefined, rc(1), { manager: "kubectl-create", apiVersion: "v1", now: T0 });
    assert.equal(created.length, 1);
    assert.deepEqual(created[0]?.fieldsV1, fieldsOf(rc(1)).toFieldsV1());
    const edited = recordUpdate(created, rc(1), rc(1, "nginx:2"), { manager: "kubectl-edit", apiVersion: "v1", now: T1 });
    const byManager = new Map(edited.map((e: ManagedEntry) => [e.manager, FieldSet.fromFieldsV1(e.fieldsV1)]));
    const image = ["f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"web"}', "f:image"];
    assert.ok(byManager.get("kubectl-edit")?.has(image));
    assert.ok(!byManager.get("kubectl-create")?.has(image));
    assert.equal(edited[0]?.time, T1, "a changed entry gets the new time");
    // Nothing changed: nothing recorded.
    assert.deepEqual(recordUpdate(created, rc(1), rc(1), { manager: "x", apiVersion: "v1", now: T1 }), created);
  });
});
