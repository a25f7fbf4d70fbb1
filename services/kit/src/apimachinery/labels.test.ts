import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { parseLabelSelector, selectorFromLabelSelector, selectorFromSet, SelectorParseError, validateLabelKey, validateLabelValue } from "./labels.js";
import { assertSupportedFields, FieldSelectorError, parseFieldSelector } from "./fields.js";

const name = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/);
const labels = fc.dictionary(name, name, { maxKeys: 4, noNullPrototype: true });

describe("label selectors", () => {
  it("parse every operator and match like Kubernetes", () => {
    const s = parseLabelSelector("app=web, tier!=db,env in (prod, staging),zone notin (a),canary,!legacy,x==y");
    assert.equal(s.matches({ app: "web", env: "prod", canary: "", x: "y" }), true);
    assert.equal(s.matches({ app: "web", env: "prod", canary: "", x: "y", legacy: "1" }), false);
    assert.equal(s.matches({ app: "web", env: "dev", canary: "", x: "y" }), false);
    assert.equal(s.matches({ app: "web", env: "prod", x: "y" }), false);
    assert.equal(s.matches({ app: "web", env: "prod", canary: "", x: "y", tier: "db" }), false);
    assert.equal(s.matches({ app: "web", env: "prod", canary: "", x: "y", zone: "a" }), false);
    assert.equal(parseLabelSelector("").isEverything(), true);
    assert.equal(parseLabelSelector("").matches({ any: "thing" }), true);
  });

  it("refuse malformed selectors and invalid keys or values", () => {
    for (const bad of ["app in (a", "app in", "=x", "a=b,", "app notin ()", "a b", "bad key!=x", "a=-bad-", "a,,b"]) {
      assert.throws(() => parseLabelSelector(bad), SelectorParseError, bad);
    }
  });

  it("print a canonical string that parses to an equivalent selector (property)", () => {
    const req = fc.oneof(
      fc.tuple(name, name).map(([k, v]) => `${k}=${v}`),
      fc.tuple(name, name).map(([k, v]) => `${k}!=${v}`),
      fc.tuple(name, fc.array(name, { minLength: 1, maxLength: 3 })).map(([k, vs]) => `${k} in (${vs.join(",")})`),
      fc.tuple(name, fc.array(name, { minLength: 1, maxLength: 3 })).map(([k, vs]) => `${k} notin (${vs.join(",")})`),
      name,
      name.map((k) => `!${k}`),
    );
    fc.assert(
      fc.property(fc.array(req, { maxLength: 4 }), labels, (reqs, l) => {
        const s = parseLabelSelector(reqs.join(","));
        const again = parseLabelSelector(s.toString());
        assert.equal(again.toString(), s.toString());
        assert.equal(again.matches(l), s.matches(l));
      }),
      { seed: 4242, numRuns: 300 },
    );
  });

  it("selectorFromSet matches exactly the supersets of the set (property)", () => {
    fc.assert(
      fc.property(labels, labels, (set, extra) => {
        assert.equal(selectorFromSet(set).matches({ ...extra, ...set }), true);
      }),
      { seed: 7, numRuns: 200 },
    );
  });

  it("reads metav1.LabelSelector", () => {
    const s = selectorFromLabelSelector({ matchLabels: { app: "x" }, matchExpressions: [{ key: "tier", operator: "In", values: ["a", "b"] }, { key: "old", operator: "DoesNotExist" }] });
    assert.equal(s.matches({ app: "x", tier: "b" }), true);
    assert.equal(s.matches({ app: "x", tier: "b", old: "1" }), false);
    assert.throws(() => selectorFromLabelSelector({ matchExpressions: [{ key: "a", operator: "Bogus" }] }), SelectorParseError);
  });

  it("validate label keys and values with Kubernetes' rules", () => {
    assert.deepEqual(validateLabelKey("app.kubernetes.io/name"), []);
    assert.notDeepEqual(validateLabelKey("a/b/c"), []);
    assert.notDeepEqual(validateLabelKey("x".repeat(64)), []);
    assert.deepEqual(validateLabelValue(""), []);
    assert.notDeepEqual(validateLabelValue("-x"), []);
  });
});

describe("field selectors", () => {
  it("parse =, ==, != and escaped values", () => {
    const s = parseFieldSelector("metadata.name=a\\,b,spec.nodeName!=n1,status.phase==Running");
    assert.deepEqual(s.fields(), ["metadata.name", "spec.nodeName", "status.phase"]);
    const vals: Record<string, string> = { "metadata.name": "a,b", "spec.nodeName": "n2", "status.phase": "Running" };
    assert.equal(s.matches((f) => vals[f]), true);
    assert.equal(parseFieldSelector(s.toString()).matches((f) => vals[f]), true);
    assert.throws(() => parseFieldSelector("nonsense"), FieldSelectorError);
    assert.throws(() => assertSupportedFields(parseFieldSelector("spec.foo=1"), ["metadata.name"], "pods"), /field label not supported: spec.foo/);
  });
});
