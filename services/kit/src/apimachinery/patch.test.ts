import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, kubeStrategicSchema, PatchError, type JsonValue, type StrategicSchema } from "./patch.js";

const json: fc.Arbitrary<JsonValue> = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>;
const obj = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 4 }).filter((k) => !k.startsWith("$") && k !== "__proto__"),
  json,
  { maxKeys: 5, noNullPrototype: true },
) as fc.Arbitrary<{ [k: string]: JsonValue }>;

/** A merge patch that turns a into b. */
function diff(a: JsonValue, b: JsonValue): JsonValue {
  const isObj = (v: JsonValue): v is { [k: string]: JsonValue } => typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObj(a) || !isObj(b)) return b;
  const out: { [k: string]: JsonValue } = {};
  for (const k of Object.keys(a)) if (!(k in b)) out[k] = null;
  for (const [k, v] of Object.entries(b)) {
    if (!(k in a)) out[k] = v;
    else if (JSON.stringify(a[k]) !== JSON.stringify(v)) out[k] = isObj(v) && isObj(a[k] as JsonValue) ? diff(a[k] as JsonValue, v) : v;
  }
  return out;
}

const noNulls = (v: JsonValue): boolean => (v === null ? false : Array.isArray(v) ? true : typeof v === "object" ? Object.values(v).every(noNulls) : true);

describe("patches", () => {
  it("merge patch: {} is identity, and a generated diff reproduces the target (property)", () => {
    fc.assert(
      fc.property(obj, obj, (a, b) => {
        assert.deepEqual(applyMergePatch(a, {}), a);
        fc.pre(noNulls(b));
        assert.deepEqual(applyMergePatch(a, diff(a, b)), b);
      }),
      { seed: 5, numRuns: 300 },
    );
  });

  it("json patch: add then remove returns the original (property)", () => {
    fc.assert(
      fc.property(
        obj,
        fc.string({ minLength: 1, maxLength: 5 }).filter((k) => k !== "__proto__"),
        json,
        (a, key, v) => {
          fc.pre(!(key in a));
          const path = `/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
          const added = applyJsonPatch(a, [{ op: "add", path, value: v }]);
          assert.deepEqual(applyJsonPatch(added, [{ op: "remove", path }]), a);
        },
      ),
      { seed: 11, numRuns: 300 },
    );
  });

  it("json patch: every operation, errors, and inputs untouched", () => {
    const doc = { a: { b: [1, 2, 3] }, c: "x" };
    const out = applyJsonPatch(doc, [
      { op: "replace", path: "/c", value: "y" },
      { op: "add", path: "/a/b/-", value: 4 },
      { op: "remove", path: "/a/b/0" },
      { op: "copy", from: "/c", path: "/d" },
      { op: "move", from: "/d", path: "/e" },
      { op: "test", path: "/e", value: "y" },
    ]);
    assert.deepEqual(out, { a: { b: [2, 3, 4] }, c: "y", e: "y" });
    assert.deepEqual(doc, { a: { b: [1, 2, 3] }, c: "x" });
    assert.throws(() => applyJsonPatch(doc, [{ op: "test", path: "/c", value: "z" }]), PatchError);
    assert.throws(() => applyJsonPatch(doc, [{ op: "remove", path: "/nope" }]), /path not found/);
    assert.throws(() => applyMergePatch({}, JSON.parse('{"__proto__":{"polluted":1}}') as JsonValue), /__proto__/);
    assert.equal(({} as Record<string, unknown>)["polluted"], undefined);
  });

  it("strategic merge: keyed lists, $patch: delete, $setElementOrder, null deletes, no $ keys kept", () => {
    const pod = {
      metadata: { labels: { a: "1", b: "2" } },
      spec: {
        containers: [
          { name: "app", image: "v1", ports: [{ containerPort: 80 }] },
          { name: "side", image: "s1" },
        ],
        tolerations: [{ key: "x" }],
      },
    };
    const out = applyStrategicMergePatch(
      pod as JsonValue,
      {
        metadata: { labels: { b: null, c: "3" } },
        spec: {
          "$setElementOrder/containers": [{ name: "side" }, { name: "app" }],
          containers: [
            { name: "app", image: "v2", ports: [{ containerPort: 443 }] },
            { name: "side", $patch: "delete" },
            { name: "new", image: "n" },
          ],
          tolerations: [{ key: "y" }],
        },
      } as JsonValue,
      kubeStrategicSchema,
    );
    assert.deepEqual(out, {
      metadata: { labels: { a: "1", c: "3" } },
      spec: {
        containers: [
          { name: "app", image: "v2", ports: [{ containerPort: 80 }, { containerPort: 443 }] },
          { name: "new", image: "n" },
        ],
        tolerations: [{ key: "y" }],
      },
    });
    assert.ok(!JSON.stringify(out).includes("$"));
  });

  it("strategic merge: service ports merge by port", () => {
    const svc = { spec: { ports: [{ port: 80, targetPort: 8080 }, { port: 443 }] } };
    assert.deepEqual(applyStrategicMergePatch(svc as JsonValue, { spec: { ports: [{ port: 80, targetPort: 9090 }] } }, kubeStrategicSchema), {
      spec: { ports: [{ port: 80, targetPort: 9090 }, { port: 443 }] },
    });
  });

  it("merge patch: RFC 7386 examples", () => {
    assert.deepEqual(applyMergePatch({ a: "b" }, { a: "c" }), { a: "c" });
    assert.deepEqual(applyMergePatch({ a: "b" }, { b: "c" }), { a: "b", b: "c" });
    assert.deepEqual(applyMergePatch({ a: "b" }, { a: null }), {});
    assert.deepEqual(applyMergePatch({ a: ["b"] }, { a: "c" }), { a: "c" });
    assert.deepEqual(applyMergePatch({ a: "c" }, { a: ["b"] }), { a: ["b"] });
    assert.deepEqual(applyMergePatch({ a: { b: "c" } }, { a: { b: "d", c: null } }), { a: { b: "d" } });
    assert.deepEqual(applyMergePatch({ a: [{ b: "c" }] }, { a: [1] }), { a: [1] });
    assert.deepEqual(applyMergePatch(["a", "b"], ["c", "d"]), ["c", "d"]);
    assert.deepEqual(applyMergePatch({ a: "b" }, ["c"]), ["c"]);
    assert.deepEqual(applyMergePatch({ a: "foo" }, null), null);
    assert.deepEqual(applyMergePatch({ e: null }, { a: 1 }), { e: null, a: 1 });
    assert.deepEqual(applyMergePatch([1, 2], { a: "b", c: null }), { a: "b" });
    assert.deepEqual(applyMergePatch({}, { a: { bb: { ccc: null } } }), { a: { bb: {} } });
    assert.deepEqual(applyMergePatch({}, { constructor: { x: 1 } }), { constructor: { x: 1 } });
  });

  it("patches never change or share their inputs (property)", () => {
    const schema: StrategicSchema = { mergeKey: () => undefined };
    fc.assert(
      fc.property(obj, obj, (a, b) => {
        const [ca, cb] = [structuredClone(a), structuredClone(b)];
        const out = applyMergePatch(a, b);
        applyStrategicMergePatch(a, b, schema);
        assert.deepEqual(a, ca);
        assert.deepEqual(b, cb);
        if (typeof out === "object" && out !== null && !Array.isArray(out)) out["mutated"] = true;
        assert.deepEqual(a, ca);
        assert.deepEqual(b, cb);
      }),
      { seed: 6, numRuns: 200 },
    );
  });

  it("strategic merge agrees with merge patch when no list has a merge key (property)", () => {
    const schema: StrategicSchema = { mergeKey: () => undefined };
    const noDirectives = (v: JsonValue): boolean => !JSON.stringify(v).includes('"$');
    fc.assert(
      fc.property(obj, obj, (a, b) => {
        fc.pre(noDirectives(a) && noDirectives(b));
        assert.deepEqual(applyStrategicMergePatch(a, b, schema), applyMergePatch(a, b));
        assert.deepEqual(applyStrategicMergePatch(a, {}, kubeStrategicSchema), a);
      }),
      { seed: 12, numRuns: 300 },
    );
  });

  it("json patch: RFC 6902 details", () => {
    assert.deepEqual(applyJsonPatch({ a: 1 }, [{ op: "replace", path: "", value: [1] }]), [1]);
    assert.deepEqual(applyJsonPatch({ a: 1 }, [{ op: "add", path: "", value: { b: 2 } }]), { b: 2 });
    assert.deepEqual(
      applyJsonPatch({ "a/b": 1, "m~n": 2 }, [
        { op: "remove", path: "/a~1b" },
        { op: "replace", path: "/m~0n", value: 3 },
      ]),
      { "m~n": 3 },
    );
    assert.deepEqual(
      applyJsonPatch({ a: [1, 2] }, [
        { op: "add", path: "/a/1", value: 9 },
        { op: "replace", path: "/a/0", value: 0 },
      ]),
      { a: [0, 9, 2] },
    );
    assert.deepEqual(applyJsonPatch({ a: [1, 2] }, [{ op: "add", path: "/a/2", value: 3 }]), { a: [1, 2, 3] });
    assert.deepEqual(applyJsonPatch({ a: { b: 1 } }, [{ op: "move", from: "/a/b", path: "/a/b" }]), { a: { b: 1 } });
    assert.deepEqual(applyJsonPatch({ a: { x: 1, y: [1] } }, [{ op: "test", path: "/a", value: { y: [1], x: 1 } }]), { a: { x: 1, y: [1] } });
    assert.deepEqual(applyJsonPatch({ a: null }, [{ op: "test", path: "/a", value: null }]), { a: null });
    const bad: [JsonValue, JsonValue, RegExp][] = [
      [{ a: [1] }, [{ op: "add", path: "/a/5", value: 1 }], /out of bounds/],
      [{ a: [1] }, [{ op: "remove", path: "/a/01" }], /invalid array index/],
      [{ a: [1] }, [{ op: "replace", path: "/a/-", value: 1 }], /invalid array index/],
      [{ a: 1 }, [{ op: "replace", path: "/b", value: 1 }], /path not found: \/b/],
      [{ a: 1 }, [{ op: "add", path: "/x/y", value: 1 }], /path not found: \/x\/y/],
      [{ a: 1 }, [{ op: "test", path: "/constructor", value: 1 }], /path not found: \/constructor/],
      [{ a: 1 }, [{ op: "test", path: "/a", value: 2 }], /test operation failed: \/a/],
      [{ a: 1 }, [{ op: "test", path: "/a" }], /needs a value/],
      [{ a: 1 }, [{ op: "add", path: "/b" }], /needs a value/],
      [{ a: 1 }, [{ op: "copy", path: "/b" }], /needs from/],
      [{ a: { b: 1 } }, [{ op: "move", from: "/a", path: "/a/c" }], /own child/],
      [{ a: 1 }, [{ op: "frob", path: "/a" }], /unknown operation "frob"/],
      [{ a: 1 }, [{ path: "/a" }], /needs an op and a path/],
      [{ a: 1 }, { op: "add" }, /must be an array/],
      [{ a: 1 }, [{ op: "add", path: "a", value: 1 }], /invalid JSON pointer/],
      [{ a: 1 }, [{ op: "add", path: "/__proto__/x", value: 1 }], /__proto__/],
      [{ a: 1 }, [{ op: "remove", path: "" }], /whole document/],
    ];
    for (const [doc, ops, message] of bad)
      assert.throws(
        () => applyJsonPatch(doc, ops),
        (e: unknown) => e instanceof PatchError && message.test(e.message),
        JSON.stringify(ops),
      );
  });

  it("strategic merge: directives on maps, retainKeys, replace, delete", () => {
    const obj1 = { spec: { strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1 } }, selector: { a: "1", b: "2" }, keep: 1 } };
    assert.deepEqual(applyStrategicMergePatch(obj1, { spec: { strategy: { $retainKeys: ["type"], type: "Recreate" } } }, kubeStrategicSchema), {
      spec: { strategy: { type: "Recreate" }, selector: { a: "1", b: "2" }, keep: 1 },
    });
    assert.deepEqual(applyStrategicMergePatch(obj1, { spec: { selector: { $patch: "replace", c: "3" } } }, kubeStrategicSchema), {
      spec: { strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1 } }, selector: { c: "3" }, keep: 1 },
    });
    assert.deepEqual(applyStrategicMergePatch(obj1, { spec: { strategy: { $patch: "delete" } } }, kubeStrategicSchema), {
      spec: { selector: { a: "1", b: "2" }, keep: 1 },
    });
    assert.deepEqual(applyStrategicMergePatch(obj1, { spec: { $patch: "merge", keep: 2 } }, kubeStrategicSchema), { ...obj1, spec: { ...obj1.spec, keep: 2 } });
    assert.deepEqual(obj1.spec.selector, { a: "1", b: "2" }, "input untouched");
  });

  it("strategic merge: finalizers merge as a set; $deleteFromPrimitiveList removes", () => {
    const o = { metadata: { finalizers: ["a", "b"] } };
    assert.deepEqual(applyStrategicMergePatch(o, { metadata: { finalizers: ["c", "a"] } }, kubeStrategicSchema), { metadata: { finalizers: ["a", "b", "c"] } });
    assert.deepEqual(applyStrategicMergePatch(o, { metadata: { "$deleteFromPrimitiveList/finalizers": ["a"] } }, kubeStrategicSchema), {
      metadata: { finalizers: ["b"] },
    });
    assert.deepEqual(
      applyStrategicMergePatch(
        o,
        { metadata: { "$setElementOrder/finalizers": ["c", "b"], finalizers: ["c"], "$deleteFromPrimitiveList/finalizers": ["a"] } },
        kubeStrategicSchema,
      ),
      { metadata: { finalizers: ["c", "b"] } },
    );
    assert.deepEqual(
      applyStrategicMergePatch({ spec: { args: ["a", "b"] } }, { spec: { args: ["c"] } }, kubeStrategicSchema),
      { spec: { args: ["c"] } },
      "other primitive lists are replaced",
    );
  });

  it("strategic merge: Kubernetes' merge keys", () => {
    const deploy = {
      spec: {
        template: {
          spec: {
            containers: [{ name: "app", env: [{ name: "A", value: "1" }], volumeMounts: [{ mountPath: "/data", name: "d" }] }],
            volumes: [{ name: "d", emptyDir: {} }],
            tolerations: [{ key: "x" }],
          },
        },
      },
    };
    const out = applyStrategicMergePatch(
      deploy,
      {
        spec: {
          template: {
            spec: {
              containers: [
                {
                  name: "app",
                  env: [
                    { name: "B", value: "2" },
                    { name: "A", $patch: "delete" },
                  ],
                  volumeMounts: [{ mountPath: "/data", readOnly: true }],
                },
              ],
              volumes: [{ name: "e", configMap: { name: "c" } }],
              tolerations: [{ key: "y" }],
            },
          },
        },
      },
      kubeStrategicSchema,
    );
    assert.deepEqual(out, {
      spec: {
        template: {
          spec: {
            containers: [{ name: "app", env: [{ name: "B", value: "2" }], volumeMounts: [{ mountPath: "/data", name: "d", readOnly: true }] }],
            volumes: [
              { name: "d", emptyDir: {} },
              { name: "e", configMap: { name: "c" } },
            ],
            tolerations: [{ key: "y" }],
          },
        },
      },
    });
    const node = { status: { conditions: [{ type: "Ready", status: "False" }], addresses: [{ type: "InternalIP", address: "10.0.0.1" }] } };
    assert.deepEqual(
      applyStrategicMergePatch(
        node,
        { status: { conditions: [{ type: "Ready", status: "True" }], addresses: [{ type: "Hostname", address: "n1" }] } },
        kubeStrategicSchema,
      ),
      {
        status: {
          conditions: [{ type: "Ready", status: "True" }],
          addresses: [
            { type: "InternalIP", address: "10.0.0.1" },
            { type: "Hostname", address: "n1" },
          ],
        },
      },
    );
    const keys: [string[], string | undefined][] = [
      [["spec", "initContainers"], "name"],
      [["spec", "ephemeralContainers", "ports"], "containerPort"],
      [["spec", "ports"], "port"],
      [["subsets", "ports"], undefined],
      [["spec", "template", "spec", "ports"], undefined],
      [["spec", "containers", "volumeDevices"], "devicePath"],
      [["metadata", "ownerReferences"], "uid"],
      [["spec", "imagePullSecrets"], "name"],
      [["spec", "hostAliases"], "ip"],
      [["subsets", "addresses"], undefined],
      [["spec", "tolerations"], undefined],
    ];
    for (const [path, key] of keys) assert.equal(kubeStrategicSchema.mergeKey(path), key, path.join("."));
  });

  it("strategic merge: list replace directive, missing merge keys, no $ keys kept", () => {
    const pod = { spec: { containers: [{ name: "a" }, { name: "b" }] } };
    assert.deepEqual(applyStrategicMergePatch(pod, { spec: { containers: [{ $patch: "replace" }, { name: "c", $x: 1 }] } }, kubeStrategicSchema), {
      spec: { containers: [{ name: "c" }] },
    });
    assert.throws(
      () => applyStrategicMergePatch(pod, { spec: { containers: [{ image: "x" }] } }, kubeStrategicSchema),
      (e: unknown) => e instanceof PatchError && /does not contain declared merge key: name/.test(e.message),
    );
    const out = applyStrategicMergePatch(
      {},
      { spec: { containers: [{ name: "n", $patch: "merge", ports: [{ containerPort: 1, $patch: "merge" }] }], $retainKeys: ["containers"] } },
      kubeStrategicSchema,
    );
    assert.deepEqual(out, { spec: { containers: [{ name: "n", ports: [{ containerPort: 1 }] }] } });
    assert.ok(!JSON.stringify(out).includes("$"));
  });
});
