import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { assertSupportedFields, escapeFieldValue, FieldSelectorError, makeFieldSelector, parseFieldSelector } from "./fields.js";

describe("field selectors", () => {
  it("parse =, ==, != and escaped values", () => {
    const s = parseFieldSelector("metadata.name=a\\,b,spec.nodeName!=n1,status.phase==Running");
    assert.deepEqual(s.fields(), ["metadata.name", "spec.nodeName", "status.phase"]);
    assert.deepEqual(s.requirements[0], { field: "metadata.name", operator: "=", value: "a,b" });
    const vals: Record<string, string> = { "metadata.name": "a,b", "spec.nodeName": "n2", "status.phase": "Running" };
    assert.equal(
      s.matches((f) => vals[f]),
      true,
    );
    assert.equal(
      s.matches((f) => ({ ...vals, "spec.nodeName": "n1" })[f]),
      false,
    );
    assert.equal(
      parseFieldSelector(s.toString()).matches((f) => vals[f]),
      true,
    );
    assert.equal(parseFieldSelector("a=x\\=y\\\\z").requirements[0]?.value, "x=y\\z");
  });

  it("print sorted, escaped terms and skip empty ones", () => {
    const s = parseFieldSelector("z=1,,a!=x\\,y,");
    assert.equal(s.toString(), "a!=x\\,y,z=1");
    assert.equal(parseFieldSelector("").isEverything(), true);
    assert.equal(parseFieldSelector(",").isEverything(), true);
    assert.equal(parseFieldSelector("").toString(), "");
  });

  it("read a missing field as the empty string", () => {
    assert.equal(
      parseFieldSelector("spec.nodeName=").matches(() => undefined),
      true,
    );
    assert.equal(
      parseFieldSelector("spec.nodeName!=").matches(() => undefined),
      false,
    );
    assert.equal(
      parseFieldSelector("spec.nodeName!=n1").matches(() => undefined),
      true,
    );
  });

  it("refuse malformed selectors with Kubernetes' messages", () => {
    const bad: [string, string][] = [
      ["nonsense", "invalid selector: 'nonsense'; can't understand 'nonsense'"],
      ["=x", "invalid selector: '=x'; can't understand '=x'"],
      ["a=b=c", "invalid field selector: unescaped character in value: ="],
      ["a=b\\n", "invalid field selector: invalid escape sequence: \\n"],
      ["a=b\\", "invalid field selector: invalid escape sequence: \\"],
    ];
    for (const [input, message] of bad) {
      assert.throws(
        () => parseFieldSelector(input),
        (e: unknown) => e instanceof FieldSelectorError && e.name === "FieldSelectorError" && e.message === message,
        input,
      );
    }
  });

  it("take the first operator, as Kubernetes splits terms", () => {
    assert.deepEqual(parseFieldSelector("a!=b").requirements[0], { field: "a", operator: "!=", value: "b" });
    assert.deepEqual(parseFieldSelector("a==b").requirements[0], { field: "a", operator: "=", value: "b" });
    assert.deepEqual(parseFieldSelector("a!b=c").requirements[0], { field: "a!b", operator: "=", value: "c" });
  });

  it("refuse unsupported fields", () => {
    const sel = parseFieldSelector("metadata.name=x,spec.foo=1");
    assert.throws(
      () => assertSupportedFields(sel, ["metadata.name"], "pods"),
      (e: unknown) => e instanceof FieldSelectorError && e.message === "field label not supported: spec.foo" && e.resource === "pods",
    );
    assert.doesNotThrow(() => assertSupportedFields(sel, ["metadata.name", "spec.foo"], "pods"));
  });

  it("escape and parse round-trip any value (property)", () => {
    const value = fc.string({ unit: fc.constantFrom("a", "b", "\\", ",", "=", "!", " ", "é", "."), maxLength: 12 });
    const field = fc.constantFrom("metadata.name", "spec.nodeName", "status.phase");
    fc.assert(
      fc.property(fc.array(fc.tuple(field, fc.boolean(), value), { maxLength: 4 }), (reqs) => {
        const text = reqs.map(([f, eq, v]) => `${f}${eq ? "=" : "!="}${escapeFieldValue(v)}`).join(",");
        const s = parseFieldSelector(text);
        const want = makeFieldSelector(reqs.map(([f, eq, v]) => ({ field: f, operator: eq ? "=" : "!=", value: v })));
        assert.deepEqual(s.requirements, want.requirements);
        assert.equal(parseFieldSelector(s.toString()).toString(), s.toString());
      }),
      { seed: 31337, numRuns: 300 },
    );
  });
});
