import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, kubeStrategicSchema, PatchError, type JsonValue } from "./patch.js";

const json: fc.Arbitrary<JsonValue> = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>;
const obj = fc.dictionary(fc.string({ minLength: 1, maxLength: 4 }).filter((k) => !k.startsWith("$") && k !== "__proto__"), json, { maxKeys: 5, noNullPrototype: true }) as fc.Arbitrary<{ [k: string]: JsonValue }>;

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
      fc.property(obj, fc.string({ minLength: 1, maxLength: 5 }).filter((k) => k !== "__proto__"), json, (a, key, v) => {
        fc.pre(!(key in a));
        const path = `/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
        const added = applyJsonPatch(a, [{ op: "add", path, value: v }]);
        assert.deepEqual(applyJsonPatch(added, [{ op: "remove", path }]), a);
      }),
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
      spec: { containers: [{ name: "app", image: "v1", ports: [{ containerPort: 80 }] }, { name: "side", image: "s1" }], tolerations: [{ key: "x" }] },
    };
    const out = applyStrategicMergePatch(pod as JsonValue, {
      metadata: { labels: { b: null, c: "3" } },
      spec: {
        "$setElementOrder/containers": [{ name: "side" }, { name: "app" }],
        containers: [{ name: "app", image: "v2", ports: [{ containerPort: 443 }] }, { name: "side", $patch: "delete" }, { name: "new", image: "n" }],
        tolerations: [{ key: "y" }],
      },
    } as JsonValue, kubeStrategicSchema);
    assert.deepEqual(out, {
      metadata: { labels: { a: "1", c: "3" } },
      spec: { containers: [{ name: "app", image: "v2", ports: [{ containerPort: 80 }, { containerPort: 443 }] }, { name: "new", image: "n" }], tolerations: [{ key: "y" }] },
    });
    assert.ok(!JSON.stringify(out).includes("$"));
  });

  it("strategic merge: service ports merge by port", () => {
    const svc = { spec: { ports: [{ port: 80, targetPort: 8080 }, { port: 443 }] } };
    assert.deepEqual(applyStrategicMergePatch(svc as JsonValue, { spec: { ports: [{ port: 80, targetPort: 9090 }] } }, kubeStrategicSchema), { spec: { ports: [{ port: 80, targetPort: 9090 }, { port: 443 }] } });
  });
});
