import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { duplicateJsonFields, duplicateYamlFields } from "./field-validation.js";
import { pod, startTestGateway, type TestGateway } from "./testing/harness.js";

const PODS = "/api/v1/namespaces/default/pods";

const warnings = (h: Record<string, unknown>): string[] => {
  const w = h["warning"];
  if (w === undefined) return [];
  // Node joins repeated headers with ", "; each of ours is `299 - "…"`.
  return String(w)
    .split(/, (?=299 )/)
    .map((s) => s.trim());
};

describe("duplicate field scanners", () => {
  it("find repeated keys in JSON objects at every depth, with list indexes", () => {
    assert.deepEqual(duplicateJsonFields('{"a":1,"a":2}'), ["a"]);
    assert.deepEqual(duplicateJsonFields('{"metadata":{"name":"x","name":"y"},"spec":{"containers":[{"name":"c"},{"name":"d","image":"i","image":"j"}]}}'), [
      "metadata.name",
      "spec.containers[1].image",
    ]);
    assert.deepEqual(duplicateJsonFields('{"a":"x\\"y","b":[1,{"c":{}},[]],"d":{"a":1}}'), []);
    assert.deepEqual(duplicateJsonFields('{"k\\u0061":1,"ka":2}'), ["ka"]);
  });

  it("find repeated keys in YAML mappings", () => {
    assert.deepEqual(duplicateYamlFields("metadata:\n  name: a\n  name: b\nspec:\n  containers:\n  - name: c\n    name: d\n"), [
      "metadata.name",
      "spec.containers[0].name",
    ]);
    assert.deepEqual(duplicateYamlFields("a: 1\nb: {a: 1}\n"), []);
  });
});

describe("fieldValidation", () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway();
  });
  after(() => t.close());

  const withUnknown = (name: string): Record<string, unknown> => ({
    ...pod(name),
    spec: { containers: [{ name: "c", image: "nginx", bogus: 1 }], foo: 1 },
  });

  it("Warn (the default): created without the unknown fields, one Warning header per path", async () => {
    const r = await t.call("POST", PODS, { body: withUnknown("warned") });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(warnings(r.headers), ['299 - "unknown field \\"spec.containers[0].bogus\\""', '299 - "unknown field \\"spec.foo\\""']);
    const spec = r.json["spec"] as Record<string, unknown>;
    assert.equal(spec["foo"], undefined);
    assert.equal((spec["containers"] as Record<string, unknown>[])[0]!["bogus"], undefined);
  });

  it("Strict: 400 listing every unknown and duplicate path, nothing created", async () => {
    const text = JSON.stringify(withUnknown("strict")).replace('"name":"strict"', '"name":"strict","name":"strict"');
    const r = await t.call("POST", `${PODS}?fieldValidation=Strict`, { body: text, headers: { "Content-Type": "application/json" } });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json["reason"], "BadRequest");
    assert.equal(
      r.json["message"],
      'Pod in version "v1" cannot be handled as a Pod: strict decoding error: duplicate field "metadata.name", unknown field "spec.containers[0].bogus", unknown field "spec.foo"',
    );
    assert.equal((await t.call("GET", `${PODS}/strict`)).status, 404);
  });

  it("Strict on a YAML body reports duplicate keys the YAML parser would refuse", async () => {
    const yaml = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: y\n  name: y\nspec:\n  containers:\n  - name: c\n    image: nginx\n";
    const strict = await t.call("POST", `${PODS}?fieldValidation=Strict`, { body: yaml, headers: { "Content-Type": "application/yaml" } });
    assert.equal(strict.status, 400, strict.text);
    assert.match(strict.json["message"] as string, /strict decoding error: duplicate field "metadata.name"$/);
    const warn = await t.call("POST", PODS, { body: yaml, headers: { "Content-Type": "application/yaml" } });
    assert.equal(warn.status, 201, warn.text);
    assert.deepEqual(warnings(warn.headers), ['299 - "duplicate field \\"metadata.name\\""']);
  });

  it("Ignore: created, no warning; a bad value → 400", async () => {
    const r = await t.call("POST", `${PODS}?fieldValidation=Ignore`, { body: withUnknown("ignored") });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.headers["warning"], undefined);
    const bad = await t.call("POST", `${PODS}?fieldValidation=Loud`, { body: pod("loud") });
    assert.equal(bad.status, 400);
    assert.match(bad.json["message"] as string, /Unsupported value: "Loud"/);
  });

  it("checks a merge patch's document: Strict refuses unknown and duplicate fields before the handlers see it", async () => {
    const calls = t.handlers.calls.length;
    const r = await t.call("PATCH", `${PODS}/warned?fieldValidation=Strict`, {
      body: '{"metadata":{"labels":{"a":"b"},"labels":{"a":"c"}},"spec":{"nope":1}}',
      headers: { "Content-Type": "application/merge-patch+json" },
    });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json["message"], 'strict decoding error: duplicate field "metadata.labels", unknown field "spec.nope"');
    assert.equal(t.handlers.calls.length, calls, "nothing reached the handlers");
    // Strategic merge directives are not fields.
    const smp = await t.call("PATCH", `${PODS}/warned?fieldValidation=Strict`, {
      body: '{"metadata":{"labels":{"$patch":"replace","a":"b"}}}',
      headers: { "Content-Type": "application/strategic-merge-patch+json" },
    });
    assert.equal(smp.status, 200, smp.text);
    // A null deletes (kubectl label pod x a-), under the default Warn and under Strict: no decoding error, no warning.
    for (const q of ["", "?fieldValidation=Strict"]) {
      const del = await t.call("PATCH", `${PODS}/warned${q}`, {
        body: '{"metadata":{"labels":{"a":null}},"spec":{"containers":[{"$patch":"delete","name":"gone"}]}}',
        headers: { "Content-Type": "application/strategic-merge-patch+json" },
      });
      assert.equal(del.status, 200, del.text);
      assert.deepEqual(warnings(del.headers), []);
    }
  });

  it("applies to update as to create", async () => {
    const got = await t.call("GET", `${PODS}/warned`);
    const body = { ...got.json, spec: { ...(got.json["spec"] as object), extra: true } };
    const strict = await t.call("PUT", `${PODS}/warned?fieldValidation=Strict`, { body });
    assert.equal(strict.status, 400);
    assert.match(strict.json["message"] as string, /unknown field "spec.extra"/);
    const warn = await t.call("PUT", `${PODS}/warned`, { body });
    assert.equal(warn.status, 200, warn.text);
    assert.deepEqual(warnings(warn.headers), ['299 - "unknown field \\"spec.extra\\""']);
  });
});
